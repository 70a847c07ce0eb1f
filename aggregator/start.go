package aggregator

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"k8s.io/client-go/tools/cache"
)

// errAggregatorNotSynced: the aggregator's informers have not read the APIServices,
// Services and EndpointSlices yet.
var errAggregatorNotSynced = errors.New("the APIServices, Services and EndpointSlices have not been read yet")

// errNotStarted: a controller has not started yet.
var errNotStarted = errors.New("not started yet")

// errAutoregistrationNotStarted: the local APIServices have not been registered yet.
var errAutoregistrationNotStarted = errors.New("the local APIServices have not been registered yet")

// Start publishes the request-header configuration aggregated servers read, starts
// the aggregator's informers, its registration of APIServices in the proxy, the local
// APIServices' availability and auto-registration, its discovery and OpenAPI reading
// of the backends (every server), and the remote availability controller (elected
// among the servers), in g, in that order. Each hook is done once what does its job
// has started. A nil Feature starts nothing.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if f == nil {
		return nil
	}
	if err := f.start(ctx, g); err != nil {
		return fmt.Errorf("starting the aggregator: %w", err)
	}
	return nil
}

// start is Start, its errors not yet said to be the aggregator's.
func (f *Feature) start(ctx context.Context, g *lifecycle.Group) error {
	if err := PublishAuthentication(ctx, f.client, AuthenticationData(f.cfg.Cluster.CACert, f.cfg.Cluster.FrontProxyCACert)); err != nil {
		return err
	}
	f.hooks[authenticationInfoHook].Done()
	if err := f.cfg.Informers.Start(ctx, g, "aggregator-informers", errAggregatorNotSynced, f.informers...); err != nil {
		return err
	}
	f.hooks[aggregatorInformersHook].Done()
	metrics := f.cfg.ReconcileMetrics
	if err := f.startController(ctx, g, "apiservice-registration", registrationHook, func(ctx context.Context, started func()) error {
		return f.agg.RunRegistration(ctx, metrics, started)
	}); err != nil {
		return err
	}
	if err := f.startController(ctx, g, "apiservice-local-availability", localAvailabilityHook, func(ctx context.Context, started func()) error {
		return f.agg.RunLocalAvailability(ctx, f.apiClient.ApiregistrationV1(), metrics, started)
	}); err != nil {
		return err
	}
	if err := f.startAutoregistration(ctx, g); err != nil {
		return err
	}
	if err := f.startController(ctx, g, "apiservice-discovery", openAPIHook, func(ctx context.Context, started func()) error {
		return f.agg.RunDiscovery(ctx, metrics, started)
	}); err != nil {
		return err
	}
	return f.startAvailability(ctx, g)
}

// startController starts the controller run as component name in g: it is ready,
// and hook done, once run has called started.
func (f *Feature) startController(ctx context.Context, g *lifecycle.Group, name, hook string, run func(ctx context.Context, started func()) error) error {
	var started atomic.Bool
	return g.Start(ctx, lifecycle.Component{Name: name,
		Run: func(ctx context.Context) error {
			return run(ctx, func() {
				started.Store(true)
				f.hooks[hook].Done()
			})
		},
		Ready: func() error {
			if !started.Load() {
				return fmt.Errorf("%w: %s", errNotStarted, name)
			}
			return nil
		},
	})
}

// startAutoregistration starts the auto-registration of the local APIServices (ready
// once it has registered the served group-versions), queued again whenever what the
// server serves changes and whenever an identity lease goes.
func (f *Feature) startAutoregistration(ctx context.Context, g *lifecycle.Group) error {
	auto := f.auto
	if leases := f.cfg.IdentityLeases; leases != nil {
		if _, err := leases.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(interface{}) { auto.Resync() }}); err != nil {
			return err
		}
	}
	if err := g.Start(ctx, lifecycle.Component{Name: "apiservice-autoregistration",
		Run: func(ctx context.Context) error {
			defer f.cfg.Registry.OnChange(ctx, auto.Resync)()
			return auto.Run(ctx)
		},
		Ready: func() error {
			if !auto.Started() {
				return errAutoregistrationNotStarted
			}
			return nil
		},
	}); err != nil {
		return fmt.Errorf("registering the local APIServices: %w", err)
	}
	f.hooks[autoregistrationHook].Done()
	return nil
}

// startAvailability starts the APIService availability controller, elected among the
// servers.
func (f *Feature) startAvailability(ctx context.Context, g *lifecycle.Group) error {
	run := reconcile.Elected(f.cfg.Election, "apiservice-availability", func(ctx context.Context) error {
		return f.agg.RunAvailability(ctx, f.apiClient.ApiregistrationV1(), f.cfg.ReconcileMetrics)
	})
	if err := g.Start(ctx, lifecycle.Component{Name: "apiservice-availability", Run: run}); err != nil {
		return fmt.Errorf("starting the APIService availability controller: %w", err)
	}
	f.hooks[availabilityHook].Done()
	return nil
}
