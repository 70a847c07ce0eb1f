package informers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
)

var errWidgetsNotSynced = errors.New("the widgets have not been read yet")

// TestSharedInformersStartOnce: a resource has one informer whoever asks; a second
// component asking to start it starts nothing; Synced names the component whose
// informers have not synced, until they have, and Check fails with it and the others.
func TestSharedInformersStartOnce(t *testing.T) {
	ctx := t.Context()
	reg := registry.New()
	st := store.NewStore(storage.New(etcdtest.Start(t), "/registry"))
	shared := informers.New(reg, st)
	res := &registry.Resource{Group: "example.com", StorageVersion: "v1", Versions: []registry.Version{{Name: "v1", Served: true}},
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"}}
	if err := res.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	partial := func() runtime.Object { return &metav1.PartialObjectMetadata{} }
	inf := shared.Typed(res.GroupResource(), partial)
	if again := shared.Typed(res.GroupResource(), partial); again != inf {
		t.Fatal("a second Typed of the resource made another informer")
	}
	var g lifecycle.Group
	t.Cleanup(func() { _ = g.Stop() })

	// Not served yet: the informer cannot sync, and its component is not ready.
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := shared.Start(sctx, &g, "first", errWidgetsNotSynced, inf); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start of an informer that cannot sync: %v, want the deadline", err)
	}
	if err := shared.Start(ctx, &g, "second", errWidgetsNotSynced, inf); err != nil {
		t.Fatalf("second Start: %v, want nil at once (already started)", err)
	}
	if err := shared.Synced(); !errors.Is(err, informers.ErrNotSynced) || err.Error() != informers.ErrNotSynced.Error()+": first" {
		t.Fatalf("Synced: %v, want it to name first only", err)
	}
	errOther := errors.New("another informer has not synced")
	check := shared.Check(func() error { return errOther })
	if err := check.Check(nil); check.Name() != informers.SyncCheck || !errors.Is(err, informers.ErrNotSynced) || !errors.Is(err, errOther) {
		t.Fatalf("Check %s: %v, want %s failing with both errors", check.Name(), err, informers.SyncCheck)
	}

	if err := reg.Put(ctx, res); err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w"}}}
	if _, err := st.Create(ctx, store.Ref{Resource: res, Version: "v1"}, w, store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return shared.Synced() == nil && len(inf.GetStore().List()) == 1, nil
	})
	if err != nil {
		t.Fatalf("informer never synced: %v (Synced: %v)", err, shared.Synced())
	}
	if err := shared.Check(func() error { return nil }).Check(nil); err != nil {
		t.Fatalf("Check once synced: %v, want nil", err)
	}
	if got, ok := inf.GetStore().List()[0].(*metav1.PartialObjectMetadata); !ok || got.Name != "w" {
		t.Fatalf("informer holds %#v, want the typed widget w", inf.GetStore().List()[0])
	}
}
