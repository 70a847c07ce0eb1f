package store

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/watchcache"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A paged list whose objects are rewritten while it pages (a storage migration's
// client path) stays consistent at its first page's revision when the watch cache
// lets the snapshot go (it came to hold more replaced values than SnapshotHold): the
// next pages are read from etcd at that revision, with the values as they were.
func TestPagedListOutlivesItsSnapshot(t *testing.T) {
	ctx := t.Context()
	s, res := cachedStore(t, watchcache.Options{SnapshotHold: 2 << 10})
	ref := Ref{Resource: res, Version: "v1", Namespace: "a"}
	const n = 30
	for i := range n {
		if _, err := s.Create(ctx, ref, gadget("a", fmt.Sprintf("g-%02d", i), i), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.List(ctx, ref, metav1.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var last *registry.Object
	for i := range n {
		var err error
		last, _, err = s.Update(ctx, Ref{Resource: res, Version: "v1", Namespace: "a", Name: fmt.Sprintf("g-%02d", i)},
			func(_ context.Context, cur *registry.Object) (*registry.Object, error) {
				_ = unstructured.SetNestedField(cur.Object, int64(100+i), "spec", "n")
				return cur, nil
			}, UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	rev, err := strconv.ParseInt(first.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	lastRev, err := strconv.ParseInt(last.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	c := s.caches.Running(res.Prefix(""))
	if c == nil {
		t.Fatal("the first page was not read from a watch cache")
	}
	if err := c.WaitFresh(ctx, lastRev); err != nil {
		t.Fatal(err)
	}
	if _, kept := c.SnapshotAt(rev); kept {
		t.Fatal("the cache still keeps the first page's snapshot, which holds more than SnapshotHold")
	}
	items := first.Items
	next := first.GetContinue()
	for next != "" {
		page, err := s.List(ctx, ref, metav1.ListOptions{Limit: 10, Continue: next})
		if err != nil {
			t.Fatal(err)
		}
		if page.GetResourceVersion() != first.GetResourceVersion() {
			t.Fatalf("a page at resourceVersion %s, the first at %s", page.GetResourceVersion(), first.GetResourceVersion())
		}
		items, next = append(items, page.Items...), page.GetContinue()
	}
	if len(items) != n {
		t.Fatalf("%d items, want %d", len(items), n)
	}
	for i, it := range items {
		if v, _, _ := unstructured.NestedInt64(it.Object, "spec", "n"); v != int64(i) {
			t.Fatalf("%s has spec.n %d, want %d as at the first page's revision", it.GetName(), v, i)
		}
	}
}
