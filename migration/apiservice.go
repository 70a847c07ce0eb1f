package migration

import (
	"context"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

// The built-in StorageVersionMigration API's APIService. kube-apiserver registers the
// group-version of a built-in API and that of a CustomResourceDefinition under one
// APIService name; when the last definition of the group-version is deleted, its
// CRD registration removes that APIService, built-in or not, and nothing registers the
// built-in's again until the server restarts (kube-aggregator's autoregister
// controller creates "onstart" APIServices once). Deleting Concord's shadowed
// definition would so take the built-in API out of discovery, the follower would
// install the definition again, and the two would take turns.
//
// So the follower reads the built-in's APIService before it deletes the definition and
// puts it back, as kube-apiserver registers it at start, whenever it is gone.

// automanagedLabel is kube-aggregator's label of the APIServices it registers itself;
// "onstart" ones are created once and left alone after.
const automanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// apiServiceSettle is how long after the definition is gone the follower keeps
// putting the APIService back before it lets the next probe decide.
const apiServiceSettle = 5 * time.Second

// migrationAPIServiceName is the APIService of the StorageVersionMigration API's
// group-version.
func migrationAPIServiceName() string {
	gv := migrationapi.StorageVersionMigrations.GroupVersion()
	return gv.Version + "." + gv.Group
}

// builtInAPIService returns the APIService of the built-in StorageVersionMigration API
// as a copy to create again, or nil where there is none (or no APIService API).
func builtInAPIService(ctx context.Context, dyn dynamic.Interface) (*unstructured.Unstructured, error) {
	cur, err := dyn.Resource(migrationapi.APIServices).Get(ctx, migrationAPIServiceName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	keep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cur.GetAPIVersion(), "kind": cur.GetKind(),
		"metadata": map[string]any{"name": cur.GetName()},
		"spec":     cur.Object["spec"],
	}}
	labels := cur.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[automanagedLabel] = "onstart"
	keep.SetLabels(labels)
	return keep, nil
}

// restoreAPIService creates keep if its APIService is missing, and reports whether it
// did.
func restoreAPIService(ctx context.Context, dyn dynamic.Interface, keep *unstructured.Unstructured) (bool, error) {
	client := dyn.Resource(migrationapi.APIServices)
	_, err := client.Get(ctx, keep.GetName(), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	_, err = client.Create(ctx, keep.DeepCopy(), metav1.CreateOptions{FieldManager: migrationapi.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	klog.FromContext(ctx).Info("kube-apiserver removed the built-in StorageVersionMigration API's APIService with Concord's definition; it is registered again", "apiService", keep.GetName())
	return true, nil
}

// settlePoll is how often the follower looks again while it settles.
const settlePoll = 200 * time.Millisecond

// settleTimeout bounds the settling: past it the next probes keep the APIService
// (follower.builtInService).
const settleTimeout = time.Minute

// settling is the follower's watch, after it deleted the definition a built-in API
// shadowed, over the built-in API's APIService: put back whenever it is missing, until
// the definition has been gone for apiServiceSettle. Each step is one reconcile, the
// next queued settlePoll later.
type settling struct {
	crd      string
	keep     *unstructured.Unstructured
	goneAt   time.Time // when the definition was first seen gone
	deadline time.Time
}

// step puts the APIService back if it is missing, and reports whether the settling
// is over: the definition gone for apiServiceSettle, or settleTimeout passed.
func (s *settling) step(ctx context.Context, f *follower) (bool, error) {
	if _, err := restoreAPIService(ctx, f.dyn, s.keep); err != nil {
		return false, err
	}
	now := time.Now()
	if s.goneAt.IsZero() {
		_, err := f.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, s.crd, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s.goneAt = now
		}
	}
	return (!s.goneAt.IsZero() && now.Sub(s.goneAt) >= apiServiceSettle) || now.After(s.deadline), nil
}
