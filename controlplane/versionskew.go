package controlplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/versionskew"
	"github.com/google/uuid"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// versionSkewLease is the lease of the version skew controller's election.
const versionSkewLease = "concord-version-skew"

// errLeasesNotSynced: the version skew controller's lease informer has not read the
// leases yet.
var errLeasesNotSynced = errors.New("the identity leases have not been read yet")

// startVersionSkew starts the version skew controller, elected among the servers,
// and the lease informer it reads (every server; in-process, over the object store).
// A server that does not serve the VersionSkew API or leases in v1 runs none.
func (i *Instance) startVersionSkew(ctx context.Context) error {
	for _, gvr := range []schema.GroupVersionResource{versionskew.GroupVersion.WithResource(versionskew.GroupResource.Resource), identity.GroupResource.WithVersion("v1")} {
		if !i.served(gvr) {
			klog.FromContext(ctx).V(2).Info("Not running the version skew controller: a resource it needs is not served", "resource", gvr)
			return nil
		}
	}
	cfg := i.LoopbackConfig()
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	rc := rest.CopyConfig(cfg)
	rc.APIPath, rc.GroupVersion = "/", &schema.GroupVersion{}
	rc.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc.ContentType, rc.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	client, err := rest.RESTClientFor(rc)
	if err != nil {
		return err
	}
	leases := i.parts.informers.Typed(identity.GroupResource, func() runtime.Object { return &coordinationv1.Lease{} })
	if err := i.start(ctx, informers.Component("version-skew-leases", errLeasesNotSynced, leases)); err != nil {
		return err
	}
	recorder, stopRecorder := reconcile.NewRecorder(ctx, cs, i.served, versionskew.ControllerName)
	ctrl, err := versionskew.New(versionskew.Config{Leases: leases, Client: client, Recorder: recorder, Metrics: i.Metrics, ReconcileMetrics: i.runtime})
	if err != nil {
		stopRecorder()
		return err
	}
	if err := i.start(ctx, closer("version-skew-events", stopRecorder)); err != nil {
		return err
	}
	run := reconcile.Elected(cs.CoordinationV1(), versionSkewLease, i.ServerID+"_"+uuid.NewString(), ctrl.Run)
	if err := i.start(ctx, lifecycle.Component{Name: "version-skew-controller", Run: run}); err != nil {
		return fmt.Errorf("starting the version skew controller: %w", err)
	}
	return nil
}

// served reports whether the server serves gvr.
func (i *Instance) served(gvr schema.GroupVersionResource) bool {
	res := i.Registry.Get(gvr.GroupResource())
	return res != nil && res.ServedVersion(gvr.Version) != nil
}
