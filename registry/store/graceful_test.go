package store_test

import (
	"sync"
	"testing"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// Deletions of an object of a resource that deletes gracefully, racing with each
// other: those with a period mark it, the first with 0 (or one that shortens to 0)
// removes it, and every deletion ends in success or NotFound; one with 0 under a
// resourceVersion precondition that holds removes it too.
func TestGracefulDeletionsRace(t *testing.T) {
	s := newStore(t)
	res := widgets(t, "v1")
	res.Hooks = &registry.Hooks{GracePeriod: func(_ *unstructured.Unstructured, requested *int64) int64 { return ptr.Deref(requested, 30) }}
	ctx := t.Context()
	for round := range 20 {
		created, err := s.Create(ctx, store.Ref{Resource: res, Version: "v1"}, widget("v1", "w"), store.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := store.Ref{Resource: res, Version: "v1", Name: "w"}
		if round%2 == 1 {
			// A deletion with 0 asked only while the object is as created: its two
			// writes, the mark and the deletion, both land.
			rv := created.GetResourceVersion()
			if _, gone, err := s.Delete(ctx, ref, store.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv},
				GracePeriodSeconds: ptr.To[int64](0)}); err != nil || !gone {
				t.Fatalf("a deletion with 0 under a precondition that holds: gone %v, %v", gone, err)
			}
			continue
		}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				period := []*int64{nil, ptr.To[int64](10), ptr.To[int64](0), ptr.To[int64](-1)}[i%4]
				if _, _, err := s.Delete(ctx, ref, store.DeleteOptions{GracePeriodSeconds: period}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("a racing deletion (period %v): %v", ptr.Deref(period, -2), err)
				}
			})
		}
		wg.Wait()
		if _, err := s.Get(ctx, ref, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("round %d: after deletions with 0: %v, want the object gone", round, err)
		}
	}
}
