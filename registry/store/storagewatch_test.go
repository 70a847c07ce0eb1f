package store

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/watchcache"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// A watch served by etcd alone (WatchStorage, and informers of a FromStorage source)
// sends a starting state of several pages, every one at the starting revision, then
// every change, and never starts the resource's watch cache.
func TestWatchStorageStartsNoCache(t *testing.T) {
	ctx := t.Context()
	s, res := cachedStore(t, watchcache.Options{})
	const n = statePage*2 + 100 // a first page of statePage, then one sized from it
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				if _, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", fmt.Sprintf("s-%04d", i), i), WriteOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	w, err := s.WatchStorage(ctx, Ref{Resource: res, Version: "v2"}, metav1.ListOptions{
		SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Writes after the watch started are changes, not part of its starting state.
	if _, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "b"}, gadget("b", "late", 0), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	events := collect(t, w, n+1)
	for i, ev := range events[:n] {
		o := unwrap(ev.Object)
		if want := fmt.Sprintf("s-%04d", i); ev.Type != watch.Added || o.GetName() != want || o.GetAPIVersion() != "example.com/v2" {
			t.Fatalf("initial event %d: %s %s %s, want ADDED %s in v2", i, ev.Type, o.GetName(), o.GetAPIVersion(), want)
		}
	}
	if ev := events[n]; ev.Type != watch.Added || unwrap(ev.Object).GetName() != "late" {
		t.Fatalf("after the starting state: %s %s, want ADDED late", ev.Type, unwrap(ev.Object).GetName())
	}
	if st := s.CacheStats(); st.Caches != 0 {
		t.Fatalf("%d watch caches run, want none", st.Caches)
	}

	// An informer of such a source (client-go's, which starts with a watch list) syncs
	// the same state and follows its changes.
	reg := registry.New()
	if err := reg.Put(ctx, res); err != nil {
		t.Fatal(err)
	}
	inf := s.NewInformer(Source{Registry: reg, Resource: res.GroupResource(), Version: "v1", FromStorage: true}, nil)
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	if got := len(inf.GetStore().ListKeys()); got != n+1 {
		t.Fatalf("the informer holds %d objects, want %d", got, n+1)
	}
	if _, _, err := s.Delete(ctx, Ref{Resource: res, Version: "v1", Namespace: "b", Name: "late"}, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok, _ := inf.GetStore().GetByKey("b/late"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the informer did not see the deletion")
		}
	}
	if st := s.CacheStats(); st.Caches != 0 {
		t.Fatalf("%d watch caches run, want none", st.Caches)
	}
}
