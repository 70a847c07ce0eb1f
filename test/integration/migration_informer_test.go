package integration

import (
	"testing"

	"github.com/concordproject/concord/harness"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// A storage migration re-encodes objects without an event to watchers (see
// TestWatchCacheMigrationIsInvisible), so an informer keeps each object's
// resourceVersion from before it. Writes conditional on that resourceVersion are
// decided as if it were current, as they are in Kubernetes, whose watchers were sent
// the migration's events: an update of the informer's copy, and a deletion
// preconditioned on it, succeed. A resourceVersion behind a real change still
// conflicts. (Before, each of them conflicted until the informer relisted, so that a
// controller writing from its lister was stuck for minutes after every migration.)
func TestInformerCopiesStayWritableAfterMigration(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithStorageMigration())
	e := newMigrationEnv(t, c, "informed.example.com", "v1", "v1", "v2")
	dyn := c.Servers[0].Dynamic(t).Resource(e.gvr("v1")).Namespace("default")
	for _, name := range []string{"updated", "deleted", "changed"} {
		w := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "informed.example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"name": name, "namespace": "default"},
			"spec":     map[string]interface{}{"size": int64(1)},
		}}
		if _, err := dyn.Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Servers[0].Dynamic(t), 0, "default", nil)
	inf := f.ForResource(e.gvr("v1")).Informer()
	f.Start(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	cached := func(name string) *unstructured.Unstructured {
		obj, ok, err := inf.GetStore().GetByKey("default/" + name)
		if err != nil || !ok {
			t.Fatalf("the informer has no %s: %v", name, err)
		}
		return obj.(*unstructured.Unstructured).DeepCopy()
	}
	before := map[string]string{}
	for _, name := range []string{"updated", "deleted", "changed"} {
		before[name] = cached(name).GetResourceVersion()
	}

	e.flip("v2")
	waitFor(t, "the widgets re-encoded in v2", func() (bool, error) {
		return e.encodings()["informed.example.com/v2"] == 3, nil
	})
	stale := cached("updated")
	if got, _ := dyn.Get(t.Context(), "updated", metav1.GetOptions{}); got.GetResourceVersion() == stale.GetResourceVersion() {
		t.Fatalf("the migration left resourceVersion %s as it was: nothing to test", stale.GetResourceVersion())
	}
	if err := unstructured.SetNestedField(stale.Object, int64(2), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Update(t.Context(), stale, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an update of the informer's copy (resourceVersion %s): %v", before["updated"], err)
	}
	rv := before["deleted"]
	if err := dyn.Delete(t.Context(), "deleted", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}); err != nil {
		t.Errorf("a deletion preconditioned on the informer's resourceVersion %s: %v", rv, err)
	}
	// A real change after the migration: the informer's resourceVersion is now behind
	// it, and a write conditional on the one before the migration conflicts.
	if _, err := dyn.Patch(t.Context(), "changed", types.MergePatchType, []byte(`{"spec":{"size":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	rv = before["changed"]
	if err := dyn.Delete(t.Context(), "changed", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}); !apierrors.IsConflict(err) {
		t.Errorf("a deletion preconditioned on %s, from before a real change: %v, want a conflict", rv, err)
	}
	old := cached("changed")
	old.SetResourceVersion(before["changed"])
	if _, err := dyn.Update(t.Context(), old, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("an update at %s, from before a real change: %v, want a conflict", before["changed"], err)
	}
}
