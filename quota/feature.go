package quota

import (
	"context"
	"fmt"
	"time"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/google/uuid"
	"k8s.io/client-go/rest"
)

// FeatureConfig is what ResourceQuotas' admission and usage controller need of the
// server.
type FeatureConfig struct {
	// Registry and Store are the server's: quotas are enforced only where they are
	// served in v1, and the usage controller counts objects in process.
	Registry *registry.Registry
	Store    *store.Store
	// Loopback is the server's own client configuration, rate limits off: the quotas
	// are read and charged, and the election runs, with it.
	Loopback *rest.Config
	// ServerID names the server in the usage controller's election.
	ServerID string
	// ResyncPeriod is --resource-quota-sync-period (ControllerConfig.ResyncPeriod).
	ResyncPeriod time.Duration
	// ReconcileMetrics receives the usage controller's samples.
	ReconcileMetrics *reconcile.Metrics
}

// Feature is ResourceQuotas as one server enforces them: the admission plugin, which
// the server's admission chain runs, and the usage controller, elected among the
// servers.
type Feature struct {
	cfg       FeatureConfig
	admission *Admission
}

// NewFeature builds the admission; nil, nil when the server does not serve
// ResourceQuotas in v1 (nothing to enforce).
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	if cfg.Registry.Served(GroupResource, "v1") == nil {
		return nil, nil
	}
	a, err := NewAdmission(cfg.Loopback)
	if err != nil {
		return nil, err
	}
	return &Feature{cfg: cfg, admission: a}, nil
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
		Registry: f.cfg.Registry, Store: f.cfg.Store, RESTConfig: f.cfg.Loopback,
		Holder: f.cfg.ServerID + "_" + uuid.NewString(), ResyncPeriod: f.cfg.ResyncPeriod, ReconcileMetrics: f.cfg.ReconcileMetrics,
	})
	if err != nil {
		return err
	}
	return g.Start(ctx, lifecycle.Component{Name: "resourcequota-controller", Run: usage.Run})
}
