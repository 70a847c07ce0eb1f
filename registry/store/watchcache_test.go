package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/watchcache"
	"github.com/concordproject/concord/storage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// cachedStore returns a store whose watch caches run (with opts) until the test ends,
// over a fresh etcd, and a namespaced custom resource with versions v1 and v2.
func cachedStore(t *testing.T, opts watchcache.Options) (*Store, *registry.Resource) {
	t.Helper()
	s, res := uncachedStore(t)
	runCaches(t, s, opts)
	return s, res
}

// runCaches runs s's watch caches with opts until the test ends.
func runCaches(t *testing.T, s *Store, opts watchcache.Options) {
	t.Helper()
	s.WatchCache = opts
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// uncachedStore returns a store without running watch caches (every read goes to etcd),
// over a fresh etcd.
func uncachedStore(t *testing.T) (*Store, *registry.Resource) {
	t.Helper()
	return storeOn(t, storage.New(etcdtest.Start(t), "/registry"))
}

// storeOn returns a store over st (namespaces a and b created), without running
// watch caches.
func storeOn(t *testing.T, st *storage.Store) (*Store, *registry.Resource) {
	t.Helper()
	res := &registry.Resource{
		Group: "example.com", Namespaced: true, StorageVersion: "v1",
		Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
		Versions: []registry.Version{{Name: "v1", Served: true}, {Name: "v2", Served: true}},
	}
	if err := res.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := NewStore(st)
	for _, ns := range []string{"a", "b"} {
		nsObj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": ns}}}
		data, _ := nsObj.MarshalJSON()
		if _, err := s.storage.Create(t.Context(), "core/namespaces/"+ns, data); err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
			t.Fatal(err)
		}
	}
	return s, res
}

func gadget(ns, name string, n int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]interface{}{"name": name, "namespace": ns},
		"spec":     map[string]interface{}{"n": int64(n)},
	}}
}

// collect reads n events from w (failing after 10 s).
func collect(t *testing.T, w watch.Interface, n int) []watch.Event {
	t.Helper()
	var out []watch.Event
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d of %d events", len(out), n)
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			out = append(out, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d of %d events", len(out), n)
		}
	}
	return out
}

// Many watches of one resource share one cache, each sees exactly its changes in
// order, in its own version, and the cache goes away once idle.
func TestWatchesShareOneCache(t *testing.T) {
	ctx := t.Context()
	s, res := cachedStore(t, watchcache.Options{IdleTimeout: 300 * time.Millisecond})
	start, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", "first", 0), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const watchers, writers, each = 12, 4, 15
	var ws []watch.Interface
	// The first watch starts the cache. A watch that finds the cache still loading
	// after a few seconds (on a loaded machine) is fed privately instead: restart it
	// until it joins the cache, so that every later watch finds the cache loaded.
	for {
		w, err := s.Watch(ctx, Ref{Resource: res, Version: "v1"}, metav1.ListOptions{ResourceVersion: start.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		if cachesReach(s, 1, 1, 15*time.Second) {
			defer w.Stop()
			ws = append(ws, w)
			break
		}
		w.Stop()
	}
	for i := 1; i < watchers; i++ {
		opts := metav1.ListOptions{ResourceVersion: start.GetResourceVersion()}
		ns, version := "", "v1"
		if i%3 == 1 {
			ns = "b"
		}
		if i%2 == 1 {
			version = "v2"
		}
		w, err := s.Watch(ctx, Ref{Resource: res, Version: version, Namespace: ns}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	waitCaches(t, s, 1, watchers)
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := []string{"a", "b"}[g%2]
			for i := 0; i < each; i++ {
				if _, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: ns}, gadget(ns, fmt.Sprintf("g%d-%d", g, i), i), WriteOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, w := range ws {
		want := writers * each
		ns, version := "", "example.com/v1"
		if i%3 == 1 {
			want, ns = writers*each/2, "b"
		}
		if i%2 == 1 {
			version = "example.com/v2"
		}
		evs := collect(t, w, want)
		last := int64(0)
		for _, ev := range evs {
			o := unwrap(ev.Object)
			rv := mustRV(t, o)
			if ev.Type != watch.Added || o.GetAPIVersion() != version || (ns != "" && o.GetNamespace() != ns) || rv <= last {
				t.Fatalf("watcher %d: %s %s/%s %s rv %d after %d", i, ev.Type, o.GetNamespace(), o.GetName(), o.GetAPIVersion(), rv, last)
			}
			last = rv
		}
	}
	for _, w := range ws {
		w.Stop()
	}
	waitCaches(t, s, 0, 0)
}

// A watch from a revision the shared cache no longer holds gets exactly its changes
// from a private feed until it has caught up, then joins the shared cache; one from a
// revision in its history joins the shared cache at once.
func TestLateJoiners(t *testing.T) {
	ctx := t.Context()
	s, res := cachedStore(t, watchcache.Options{})
	first, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", "g-0", 0), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 5; i++ {
		if _, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", fmt.Sprint("g-", i), i), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fifth := mustRV(t, mustGet(t, s, res, "g-4"))
	// The shared cache starts at the newest revision (a watch that finds it still
	// loading after a few seconds is fed privately: restart it until it joins).
	var early watch.Interface
	for early == nil {
		w, err := s.Watch(ctx, Ref{Resource: res, Version: "v1"}, metav1.ListOptions{ResourceVersion: fmt.Sprint(fifth)})
		if err != nil {
			t.Fatal(err)
		}
		if !cachesReach(s, 1, 1, 15*time.Second) {
			w.Stop()
			continue
		}
		early = w
	}
	defer early.Stop()
	if _, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", "g-5", 5), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	collect(t, early, 1)
	// Older than the cache: a private feed replays g-1..g-5 from etcd.
	old, err := s.Watch(ctx, Ref{Resource: res, Version: "v1"}, metav1.ListOptions{ResourceVersion: first.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	evs := collect(t, old, 5)
	for i, ev := range evs {
		if got := unwrap(ev.Object).GetName(); got != fmt.Sprint("g-", i+1) {
			t.Fatalf("private feed event %d: %s", i, got)
		}
	}
	// Within the cache's history: only g-5.
	late, err := s.Watch(ctx, Ref{Resource: res, Version: "v1"}, metav1.ListOptions{ResourceVersion: fmt.Sprint(fifth)})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Stop()
	if got := unwrap(collect(t, late, 1)[0].Object).GetName(); got != "g-5" {
		t.Fatalf("late joiner got %s first, want g-5", got)
	}
	// early and late; and old, whose private feed has caught up with the shared
	// cache's history and handed it over.
	waitCaches(t, s, 1, 3)
}

func mustGet(t *testing.T, s *Store, res *registry.Resource, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := s.Get(t.Context(), Ref{Resource: res, Version: "v1", Namespace: "a", Name: name}, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func mustRV(t *testing.T, o *unstructured.Unstructured) int64 {
	t.Helper()
	var rv int64
	if _, err := fmt.Sscan(o.GetResourceVersion(), &rv); err != nil {
		t.Fatal(err)
	}
	return rv
}

// waitCaches waits until s runs n caches feeding watchers watchers in all.
func waitCaches(t *testing.T, s *Store, n, watchers int) {
	t.Helper()
	if !cachesReach(s, n, watchers, 10*time.Second) {
		st := s.CacheStats()
		t.Fatalf("%d caches feeding %d watchers, want %d and %d", st.Caches, st.Watchers, n, watchers)
	}
}

// sharedCacheReady starts res's shared watch cache and waits until it has loaded its
// objects, so that every watch started next joins it (a watch that finds the caches
// not running yet, or the cache still loading after a few seconds, is fed privately).
func sharedCacheReady(t *testing.T, s *Store, res *registry.Resource) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Get is nil until the caches run (runCaches starts them in a goroutine).
		if c := s.caches.Get(res.Prefix(""), 0); c != nil && c.WaitReady(t.Context()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch cache of %s did not load within 30s", res.GroupResource())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cachesReach reports whether s comes to have n caches feeding watchers watchers
// within d.
func cachesReach(s *Store, n, watchers int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if st := s.CacheStats(); st.Caches == n && st.Watchers == watchers {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A watch from a revision further back than the cache's history gets every change
// from a private feed of etcd's history, however long the replay.
func TestLongReplayMissesNothing(t *testing.T) {
	ctx := t.Context()
	const history = 64
	s, res := cachedStore(t, watchcache.Options{HistorySize: history})
	first, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", "r-0", 0), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A watcher from now on starts the shared cache.
	shared, err := s.Watch(ctx, Ref{Resource: res, Version: "v1"}, metav1.ListOptions{ResourceVersion: first.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Stop()
	const n = history*4 + 200
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				if _, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", fmt.Sprint("r-", i+1), i), WriteOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, w := range []watch.Interface{shared, mustWatch(t, s, res, first.GetResourceVersion())} {
		seen := map[string]bool{}
		for _, ev := range collect(t, w, n) {
			seen[unwrap(ev.Object).GetName()] = true
		}
		if len(seen) != n {
			t.Fatalf("%d distinct objects of %d", len(seen), n)
		}
	}
}

func mustWatch(t *testing.T, s *Store, res *registry.Resource, rv string) watch.Interface {
	t.Helper()
	w, err := s.Watch(t.Context(), Ref{Resource: res, Version: "v1"}, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// unwrap returns a watch event's object as unstructured.
func unwrap(obj runtime.Object) *unstructured.Unstructured {
	if so, ok := obj.(*SharedObject); ok {
		return so.Unstructured
	}
	return obj.(*unstructured.Unstructured)
}
