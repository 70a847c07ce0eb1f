package migration

import (
	"context"
	"encoding/json"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
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

// keptAPIService carries the built-in API's APIService that a follower read before it
// deleted the definition shadowing it from one term of leadership to the next:
// kube-apiserver may remove the APIService after the term that deleted the definition
// has ended (a leadership change a moment after the deletion), and the next term's
// follower, whose probe then finds no API served, puts it back.
type keptAPIService struct {
	service *unstructured.Unstructured
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
// (follower.kept).
const settleTimeout = time.Minute

// cleanupNudge is how often, at most, the follower touches the deleted definition
// while kube-apiserver's cleanup of its objects stands failed.
//
// That cleanup (the definition's finalizer) fails when it runs before the objects'
// storage is ready, as right after kube-apiserver restarts: condition Terminating,
// reason InstanceDeletionFailed, "could not list instances: storage is (re)initializing".
// It is retried at once, but a retry that reads the definition from a cache older than
// the failure's own status write conflicts and gives up, and the finalizer is queued
// again only by a change of the definition beyond its Terminating condition, or by
// its informer's resync minutes later. An annotation written on the definition is such
// a change.
const cleanupNudge = 5 * time.Second

// annotationCleanupRequested is the annotation the follower writes on a deleted
// definition whose cleanup stands failed: the time it asked for another attempt.
const annotationCleanupRequested = "migration.concord.io/cleanup-requested"

// settling is the follower's watch, after it deleted the definition a built-in API
// shadowed, over the built-in API's APIService: put back whenever it is missing, until
// the definition has been gone for apiServiceSettle. Each step is one reconcile, the
// next queued settlePoll later.
type settling struct {
	crd      string
	keep     *unstructured.Unstructured
	goneAt   time.Time // when the definition was first seen gone
	nudgedAt time.Time // when the definition's cleanup was last asked to try again
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
		crd, err := f.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, s.crd, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			s.goneAt = now
		case err == nil && cleanupFailed(crd) && now.Sub(s.nudgedAt) >= cleanupNudge:
			s.nudgedAt = now
			if err := requestCleanup(ctx, f.crds, crd, now); err != nil {
				klog.FromContext(ctx).Info("Could not ask for another cleanup of the deleted StorageVersionMigration definition", "crd", s.crd, "err", err)
			}
		}
	}
	return (!s.goneAt.IsZero() && now.Sub(s.goneAt) >= apiServiceSettle) || now.After(s.deadline), nil
}

// cleanupFailed reports whether crd is being deleted and kube-apiserver's cleanup of
// its objects stands failed (see cleanupNudge).
func cleanupFailed(crd *apiextensionsv1.CustomResourceDefinition) bool {
	if crd.DeletionTimestamp == nil {
		return false
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Terminating {
			return c.Status == apiextensionsv1.ConditionTrue && c.Reason == "InstanceDeletionFailed"
		}
	}
	return false
}

// requestCleanup writes annotationCleanupRequested on crd (refused if its uid changed),
// which has kube-apiserver's finalizer look at it again.
func requestCleanup(ctx context.Context, cs apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition, now time.Time) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         crd.UID,
		"annotations": map[string]string{annotationCleanupRequested: now.UTC().Format(time.RFC3339Nano)},
	}})
	if err != nil {
		return err
	}
	_, err = cs.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: migrationapi.FieldManager})
	if err == nil {
		klog.FromContext(ctx).Info("kube-apiserver's cleanup of the deleted StorageVersionMigration definition failed and stalls; asked it to try again", "crd", crd.Name)
	}
	return err
}
