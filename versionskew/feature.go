package versionskew

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// errLeasesNotSynced: the controller's lease informer has not read the leases yet.
var errLeasesNotSynced = errors.New("the identity leases have not been read yet")

// Feature is the version skew controller as one server runs it: the informer of
// leases every server runs, and the controller, elected among the servers.
type Feature struct {
	srv    feature.Server
	cs     kubernetes.Interface
	client rest.Interface
	leases cache.SharedIndexInformer
}

// NewFeature builds the clients and the informer; nil, nil when the server does not
// serve the VersionSkew API or leases in v1 (it runs no controller then: log says
// why). The report, the Events (to the Events API the server serves) and the election
// are written with the server's own client; the gauges go to its Metrics.
func NewFeature(srv feature.Server, log klog.Logger) (*Feature, error) {
	for _, gvr := range []schema.GroupVersionResource{GroupVersion.WithResource(GroupResource.Resource), identity.GroupResource.WithVersion("v1")} {
		if srv.Registry.Served(gvr.GroupResource(), gvr.Version) == nil {
			log.V(2).Info("Not running the version skew controller: a resource it needs is not served", "resource", gvr)
			return nil, nil
		}
	}
	loopback := srv.LoopbackConfig()
	cs, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(loopback)
	rc.APIPath, rc.GroupVersion = "/", &schema.GroupVersion{}
	rc.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc.ContentType, rc.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	client, err := rest.RESTClientFor(rc)
	if err != nil {
		return nil, err
	}
	leases := srv.Informers.Typed(identity.GroupResource, func() runtime.Object { return &coordinationv1.Lease{} })
	return &Feature{srv: srv, cs: cs, client: client, leases: leases}, nil
}

// Checks are none: the controller has no post-start hook.
func (f *Feature) Checks() []health.Checker { return nil }

// Start starts, in g, the lease informer (ready once synced), the Event recorder and
// the controller, elected among the servers. A nil Feature starts nothing.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if f == nil {
		return nil
	}
	if err := f.srv.Informers.Start(ctx, g, "version-skew-leases", errLeasesNotSynced, f.leases); err != nil {
		return err
	}
	served := func(gvr schema.GroupVersionResource) bool {
		return f.srv.Registry.Served(gvr.GroupResource(), gvr.Version) != nil
	}
	recorder, stopRecorder := reconcile.NewRecorder(ctx, f.cs, served, ControllerName)
	ctrl, err := New(Config{Leases: f.leases, Client: f.client, Recorder: recorder, Metrics: f.srv.Metrics, ReconcileMetrics: f.srv.ReconcileMetrics})
	if err != nil {
		stopRecorder()
		return err
	}
	if err := g.Start(ctx, lifecycle.Closer("version-skew-events", stopRecorder)); err != nil {
		return err
	}
	run := reconcile.Elected(f.srv.Election, "version-skew-controller", ctrl.Run)
	if err := g.Start(ctx, lifecycle.Component{Name: "version-skew-controller", Run: run}); err != nil {
		return fmt.Errorf("starting the version skew controller: %w", err)
	}
	return nil
}
