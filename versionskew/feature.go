package versionskew

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// electionLease is the lease of the controller's election.
const electionLease = "concord-version-skew"

// errLeasesNotSynced: the controller's lease informer has not read the leases yet.
var errLeasesNotSynced = errors.New("the identity leases have not been read yet")

// FeatureConfig is what the version skew controller needs of the server.
type FeatureConfig struct {
	// Registry is the server's: the controller runs only where the VersionSkew API
	// and leases are served, and writes Events to the Events API it serves.
	Registry *registry.Registry
	// Informers are the server's shared informers (the leases).
	Informers *informers.Shared
	// Loopback is the server's own client configuration, rate limits off: the report,
	// the Events and the election are written with it.
	Loopback *rest.Config
	// ServerID names the server in the election.
	ServerID string
	// Metrics receives the gauges, ReconcileMetrics the controller's samples.
	Metrics          prometheus.Registerer
	ReconcileMetrics *reconcile.Metrics
	// Log is the server's logger, which says why a server runs no controller.
	Log klog.Logger
}

// Feature is the version skew controller as one server runs it: the informer of
// leases every server runs, and the controller, elected among the servers.
type Feature struct {
	cfg    FeatureConfig
	cs     kubernetes.Interface
	client rest.Interface
	leases cache.SharedIndexInformer
}

// NewFeature builds the clients and the informer; nil, nil when the server does not
// serve the VersionSkew API or leases in v1 (it runs no controller then).
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	for _, gvr := range []schema.GroupVersionResource{GroupVersion.WithResource(GroupResource.Resource), identity.GroupResource.WithVersion("v1")} {
		if cfg.Registry.Served(gvr.GroupResource(), gvr.Version) == nil {
			cfg.Log.V(2).Info("Not running the version skew controller: a resource it needs is not served", "resource", gvr)
			return nil, nil
		}
	}
	cs, err := kubernetes.NewForConfig(cfg.Loopback)
	if err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(cfg.Loopback)
	rc.APIPath, rc.GroupVersion = "/", &schema.GroupVersion{}
	rc.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc.ContentType, rc.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	client, err := rest.RESTClientFor(rc)
	if err != nil {
		return nil, err
	}
	leases := cfg.Informers.Typed(identity.GroupResource, func() runtime.Object { return &coordinationv1.Lease{} })
	return &Feature{cfg: cfg, cs: cs, client: client, leases: leases}, nil
}

// Checks are none: the controller has no post-start hook.
func (f *Feature) Checks() []health.Checker { return nil }

// Start starts, in g, the lease informer (ready once synced), the Event recorder and
// the controller, elected among the servers. A nil Feature starts nothing.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if f == nil {
		return nil
	}
	if err := f.cfg.Informers.Start(ctx, g, "version-skew-leases", errLeasesNotSynced, f.leases); err != nil {
		return err
	}
	served := func(gvr schema.GroupVersionResource) bool {
		return f.cfg.Registry.Served(gvr.GroupResource(), gvr.Version) != nil
	}
	recorder, stopRecorder := reconcile.NewRecorder(ctx, f.cs, served, ControllerName)
	ctrl, err := New(Config{Leases: f.leases, Client: f.client, Recorder: recorder, Metrics: f.cfg.Metrics, ReconcileMetrics: f.cfg.ReconcileMetrics})
	if err != nil {
		stopRecorder()
		return err
	}
	if err := g.Start(ctx, lifecycle.Component{Name: "version-skew-events", Run: func(ctx context.Context) error {
		<-ctx.Done()
		stopRecorder()
		return nil
	}}); err != nil {
		return err
	}
	run := reconcile.Elected(f.cs.CoordinationV1(), electionLease, f.cfg.ServerID+"_"+uuid.NewString(), ctrl.Run)
	if err := g.Start(ctx, lifecycle.Component{Name: "version-skew-controller", Run: run}); err != nil {
		return fmt.Errorf("starting the version skew controller: %w", err)
	}
	return nil
}
