package quota

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
)

// Feature is ResourceQuotas as one server enforces them: the admission plugin, which
// the server's admission chain runs, and the usage controller, elected among the
// servers.
type Feature struct {
	srv       feature.Server
	opts      Options
	admission *Admission
}

// NewFeature builds the admission; nil, nil when the server does not serve
// ResourceQuotas in v1 (nothing to enforce). The quotas are read and charged, and the
// usage controller (which counts objects in the server's object store, recounting
// every o.SyncPeriod) is elected, with the server's own client.
func NewFeature(srv feature.Server, o Options) (*Feature, error) {
	if srv.Registry.Served(GroupResource, "v1") == nil {
		return nil, nil
	}
	a, err := NewAdmission(srv.LoopbackConfig())
	if err != nil {
		return nil, err
	}
	return &Feature{srv: srv, opts: o, admission: a}, nil
}

// Admission is the ResourceQuota admission plugin: the server's admission chain runs
// it after the other validating plugins, and Start runs its informer.
func (f *Feature) Admission() *Admission { return f.admission }

// Checks are none: kube-apiserver has no post-start hook of quotas.
func (f *Feature) Checks() []health.Checker { return nil }

// Start starts, in g, the admission's informer (ready once it has read the quotas)
// and the usage controller, elected among the servers. A nil Feature starts nothing.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if f == nil {
		return nil
	}
	if err := g.Start(ctx, lifecycle.Component{Name: "resourcequota-admission", Run: f.admission.Run, Ready: f.admission.Ready}); err != nil {
		return fmt.Errorf("starting resource quota admission: %w", err)
	}
	usage, err := NewController(ControllerConfig{
		Registry: f.srv.Registry, Store: f.srv.Store, RESTConfig: f.srv.LoopbackConfig(),
		Election: f.srv.Election, ResyncPeriod: f.opts.SyncPeriod, ReconcileMetrics: f.srv.ReconcileMetrics,
	})
	if err != nil {
		return err
	}
	return g.Start(ctx, lifecycle.Component{Name: "resourcequota-controller", Run: usage.Run})
}
