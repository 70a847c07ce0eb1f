package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/server"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// errAggregatorNotSynced: the aggregator's informers have not read the APIServices,
// Services and EndpointSlices yet.
var errAggregatorNotSynced = errors.New("the APIServices, Services and EndpointSlices have not been read yet")

// availabilityLease is the lease of the APIService availability controller's election.
const availabilityLease = "concord-apiservice-availability"

// The aggregator's post-start hooks and check, named as kube-apiserver's.
const (
	authenticationInfoHook  = "start-cluster-authentication-info-controller"
	aggregatorInformersHook = "start-kube-aggregator-informers"
	registrationHook        = "apiservice-registration-controller"
	localAvailabilityHook   = "apiservice-status-local-available-controller"
	availabilityHook        = "apiservice-status-remote-available-controller"
	autoregistrationHook    = "kube-apiserver-autoregistration"
	openAPIHook             = "apiservice-openapi-controller"
	autoregisterCompletion  = "autoregister-completion"
)

// aggregatorHooks are the aggregator's post-start hooks, in kube-apiserver's order.
var aggregatorHooks = []string{authenticationInfoHook, aggregatorInformersHook, registrationHook,
	localAvailabilityHook, availabilityHook, autoregistrationHook, openAPIHook}

var (
	servicesGR       = schema.GroupResource{Resource: "services"}
	endpointSlicesGR = schema.GroupResource{Group: discoveryv1.GroupName, Resource: "endpointslices"}
)

// aggregation is the aggregator of a server, its informers and hooks (nil when the
// server does not serve APIServices, Services and EndpointSlices in v1).
type aggregation struct {
	agg       *aggregator.Aggregator
	informers []cache.SharedIndexInformer
	// auto keeps the local APIServices (started by startAggregation); completion is
	// its autoregister-completion check.
	auto       *aggregator.Autoregistration
	completion health.Checker
}

// newAggregation builds the aggregator (serving phase): its informers read the object
// store; started by startAggregation.
func (i *Instance) newAggregation() (*server.Aggregated, error) {
	for _, gr := range []schema.GroupResource{aggregator.GroupResource, servicesGR, endpointSlicesGR} {
		if i.Registry.Served(gr, "v1") == nil {
			klog.Background().V(2).Info("Not an aggregator: a resource it reads is not served in v1", "resource", gr)
			return nil, nil
		}
	}
	apiServices := i.parts.informers.Typed(aggregator.GroupResource, func() runtime.Object { return &apiregistrationv1.APIService{} })
	services := i.parts.informers.Typed(servicesGR, func() runtime.Object { return &corev1.Service{} })
	slices := i.parts.informers.Typed(endpointSlicesGR, func() runtime.Object { return &discoveryv1.EndpointSlice{} })
	sv := i.parts.serving
	agg, err := aggregator.New(aggregator.Config{APIServices: apiServices, Services: services, EndpointSlices: slices,
		ProxyClientCert: sv.proxyCert, ProxyClientKey: sv.proxyKey})
	if err != nil {
		return nil, err
	}
	ag := &aggregation{agg: agg, informers: []cache.SharedIndexInformer{apiServices, services, slices}}
	apiClient, err := aggregatorclient.NewForConfig(i.unlimitedLoopback())
	if err != nil {
		return nil, err
	}
	ag.auto, err = agg.NewAutoregistration(aggregator.AutoregistrationConfig{
		ServerID: i.ServerID, Served: i.servedGroupVersions, Live: i.serverLive(),
		Client: apiClient.ApiregistrationV1(), Metrics: i.runtime,
	})
	if err != nil {
		return nil, err
	}
	ag.completion = health.NamedCheck(autoregisterCompletion, ag.auto.Completion)
	i.parts.aggregation = ag
	return &server.Aggregated{Proxy: agg.Proxy, Discovery: agg.Discovery}, nil
}

// startAggregation publishes the request-header configuration aggregated servers
// read, starts the aggregator's informers, its registration of APIServices in the
// proxy, the local APIServices' auto-registration and availability, its discovery and
// OpenAPI reading of the backends (every server), and the remote availability
// controller (elected among the servers).
func (i *Instance) startAggregation(ctx context.Context) error {
	ag := i.parts.aggregation
	if ag == nil {
		return nil
	}
	cfg := i.unlimitedLoopback()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	apiClient, err := aggregatorclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	sv := i.parts.serving
	if err := aggregator.PublishAuthentication(ctx, client, aggregator.AuthenticationData(sv.clientCA, sv.frontProxyCA)); err != nil {
		return err
	}
	i.finish(authenticationInfoHook)
	if err := i.parts.informers.Start(ctx, &i.components, "aggregator-informers", errAggregatorNotSynced, ag.informers...); err != nil {
		return err
	}
	i.finish(aggregatorInformersHook)
	// Each controller is ready, and its hook finished, once it has started.
	run := func(name, hook string, run func(ctx context.Context, started func()) error) error {
		var started atomic.Bool
		return i.start(ctx, lifecycle.Component{Name: name,
			Run: func(ctx context.Context) error {
				return run(ctx, func() {
					started.Store(true)
					i.finish(hook)
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
	if err := run("apiservice-registration", registrationHook, func(ctx context.Context, started func()) error {
		return ag.agg.RunRegistration(ctx, i.runtime, started)
	}); err != nil {
		return err
	}
	if err := run("apiservice-local-availability", localAvailabilityHook, func(ctx context.Context, started func()) error {
		return ag.agg.RunLocalAvailability(ctx, apiClient.ApiregistrationV1(), i.runtime, started)
	}); err != nil {
		return err
	}
	if err := i.startAutoregistration(ctx); err != nil {
		return err
	}
	if err := run("apiservice-discovery", openAPIHook, func(ctx context.Context, started func()) error {
		return ag.agg.RunDiscovery(ctx, i.runtime, started)
	}); err != nil {
		return err
	}
	return i.startAvailability(ctx, client, apiClient)
}

// startAutoregistration starts the auto-registration of the local APIServices (ready
// once it has registered the served group-versions), queued again whenever what the
// server serves changes and whenever an identity lease goes.
func (i *Instance) startAutoregistration(ctx context.Context) error {
	auto := i.parts.aggregation.auto
	if leases := i.parts.identity.Leases(); leases != nil {
		if _, err := leases.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(interface{}) { auto.Resync() }}); err != nil {
			return err
		}
	}
	if err := i.start(ctx, lifecycle.Component{Name: "apiservice-autoregistration",
		Run: func(ctx context.Context) error {
			defer i.Registry.OnChange(ctx, auto.Resync)()
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
	i.finish(autoregistrationHook)
	return nil
}

// errNotStarted: a controller has not started yet.
var errNotStarted = errors.New("not started yet")

// errAutoregistrationNotStarted: the local APIServices have not been registered yet.
var errAutoregistrationNotStarted = errors.New("the local APIServices have not been registered yet")

// servedGroupVersions returns the group-versions this server serves (but
// apiregistration.k8s.io's, which has no APIService in Kubernetes either).
func (i *Instance) servedGroupVersions() []aggregator.ServedGroupVersion {
	seen := map[schema.GroupVersion]int{}
	var out []aggregator.ServedGroupVersion
	for _, res := range i.Registry.Resources() {
		if res.Group == aggregator.GroupResource.Group {
			continue
		}
		for _, v := range res.ServedVersions() {
			gv := schema.GroupVersion{Group: res.Group, Version: v}
			if at, ok := seen[gv]; ok {
				out[at].CRD = out[at].CRD && res.Owner != nil
				continue
			}
			seen[gv] = len(out)
			out = append(out, aggregator.ServedGroupVersion{GroupVersion: gv, CRD: res.Owner != nil})
		}
	}
	return out
}

// serverLive returns whether the server of an ID runs: whether its identity lease
// exists (it goes when the server stops, or once expired, when the elected collector
// removes it, so that every server decides alike; nil without identity leases).
func (i *Instance) serverLive() func(id string) bool {
	leases := i.parts.identity.Leases()
	if leases == nil {
		return nil
	}
	return func(id string) bool {
		_, ok, err := leases.GetStore().GetByKey(identity.Namespace + "/" + id)
		return err == nil && ok
	}
}

// startAvailability starts the APIService availability controller, elected among the
// servers.
func (i *Instance) startAvailability(ctx context.Context, client kubernetes.Interface, apiClient aggregatorclient.Interface) error {
	ag := i.parts.aggregation
	run := reconcile.Elected(client.CoordinationV1(), availabilityLease, i.ServerID+"_"+uuid.NewString(), func(ctx context.Context) error {
		return ag.agg.RunAvailability(ctx, apiClient.ApiregistrationV1(), i.runtime)
	})
	if err := i.start(ctx, lifecycle.Component{Name: "apiservice-availability", Run: run}); err != nil {
		return fmt.Errorf("starting the APIService availability controller: %w", err)
	}
	i.finish(availabilityHook)
	return nil
}

// storageVersionPublishers returns the groups whose StorageVersions user may write as
// an aggregated server (none before the aggregator is built, in the serving phase,
// before any request).
func (i *Instance) storageVersionPublishers(user string) []string {
	if ag := i.parts.aggregation; ag != nil {
		return ag.agg.PublisherGroups(user)
	}
	return nil
}
