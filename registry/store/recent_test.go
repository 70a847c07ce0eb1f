package store_test

import (
	"context"
	"testing"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Two servers share one etcd. Server a updates from the state it remembers of an
// object; when server b has written since, every outcome must be what a fresh read
// gives: a write based on the stale state must not happen, a client's current
// resourceVersion is no conflict, a no-op answers the current object, and a stale
// resourceVersion is still a conflict.
func TestUpdatesFromRememberedStateAreNeverStale(t *testing.T) {
	ctx := t.Context()
	cli := etcdtest.Start(t)
	a := store.NewStore(storage.New(cli, "/registry"))
	b := store.NewStore(storage.New(cli, "/registry"))
	res := widgets(t, "v1")

	created, err := a.Create(ctx, store.Ref{Resource: res, Version: "v1"}, widget("v1", "w"), store.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setSize := func(size int64, rv string) store.UpdateFunc {
		return func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			_ = unstructured.SetNestedField(cur.Object, size, "spec", "size")
			cur.SetResourceVersion(rv)
			return cur, nil
		}
	}
	size := func(o *unstructured.Unstructured) int64 {
		n, _, _ := unstructured.NestedInt64(o.Object, "spec", "size")
		return n
	}

	// b moves the object on; a still remembers its own create.
	moved, _, err := b.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: "w"}, setSize(4, created.GetResourceVersion()), store.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// A client that read from b writes through a with b's resourceVersion.
	got, _, err := a.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: "w"}, setSize(5, moved.GetResourceVersion()), store.UpdateOptions{})
	if err != nil || size(got) != 5 || got.GetResourceVersion() == moved.GetResourceVersion() {
		t.Fatalf("update through a with the current resourceVersion: %v, %v", got, err)
	}

	// b moves it on again; a no-op through a answers the current state, not a's.
	again, _, err := b.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: "w"}, setSize(6, got.GetResourceVersion()), store.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noop, _, err := a.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: "w"}, setSize(6, again.GetResourceVersion()), store.UpdateOptions{})
	if err != nil || size(noop) != 6 || noop.GetResourceVersion() != again.GetResourceVersion() {
		t.Fatalf("no-op through a: %v at %s, %v; want size 6 at %s", size(noop), noop.GetResourceVersion(), err, again.GetResourceVersion())
	}

	// A stale resourceVersion is a conflict whatever a remembers.
	if _, _, err := a.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: "w"}, setSize(7, moved.GetResourceVersion()), store.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale resourceVersion through a: %v, want a conflict", err)
	}

	// Deleted through b: a's update finds it gone.
	if _, _, err := b.Delete(ctx, store.Ref{Resource: res, Version: "v1", Name: "w"}, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: "w"}, setSize(8, again.GetResourceVersion()), store.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("update through a after deletion through b: %v, want NotFound", err)
	}
	if _, err := a.Get(ctx, store.Ref{Resource: res, Version: "v1", Name: "w"}, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get through a: %v", err)
	}
}

// Many writers on two servers increment one counter with read-modify-write cycles that
// start from whatever each server remembers: no increment is lost.
func TestManyWritersThroughRememberedState(t *testing.T) {
	ctx := t.Context()
	cli := etcdtest.Start(t)
	stores := []*store.Store{store.NewStore(storage.New(cli, "/registry")), store.NewStore(storage.New(cli, "/registry"))}
	res := widgets(t, "v1")
	if _, err := stores[0].Create(ctx, store.Ref{Resource: res, Version: "v1"}, widget("v1", "counter"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 25
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			s := stores[w%2]
			for range each {
				for {
					cur, err := s.Get(ctx, store.Ref{Resource: res, Version: "v1", Name: "counter"}, metav1.GetOptions{})
					if err != nil {
						errs <- err
						return
					}
					_, _, err = s.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: "counter"}, func(_ context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
						n, _, _ := unstructured.NestedInt64(cur.Object, "spec", "size")
						next := cur.DeepCopy()
						_ = unstructured.SetNestedField(next.Object, n+1, "spec", "size")
						return next, nil
					}, store.UpdateOptions{})
					if apierrors.IsConflict(err) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	final, err := stores[1].Get(ctx, store.Ref{Resource: res, Version: "v1", Name: "counter"}, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(final.Object, "spec", "size"); n != 3+writers*each {
		t.Fatalf("counter = %d, want %d", n, 3+writers*each)
	}
}
