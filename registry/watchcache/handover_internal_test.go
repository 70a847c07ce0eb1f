package watchcache

import (
	"fmt"
	"testing"

	"github.com/concordproject/concord/storage"
)

// A private watch from before the shared cache's history relays etcd's changes until
// it has caught up, then joins the shared cache: its watcher gets every change once,
// in order, across the hand-over, and keeps getting them from the shared cache; the
// private etcd watch ends; Stop leaves the shared cache.
func TestPrivateWatchJoinsSharedCache(t *testing.T) {
	ctx := t.Context()
	st, m := runCaches(t, "/handover", Options{HistorySize: 4})
	write := func(from, to int) int64 {
		t.Helper()
		var rev int64
		for i := from; i < to; i++ {
			var err error
			if rev, err = st.Create(ctx, fmt.Sprintf("things/t-%03d", i), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		return rev
	}
	start := write(0, 1)
	var shared *Cache
	waitFor(t, "a ready shared cache", func() bool { shared = m.Get("things/", 0); return shared != nil && shared.WaitReady(ctx) })
	last := write(1, 40) // far past the shared cache's history of 4
	if err := shared.WaitFresh(ctx, last); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Watch(start); err == nil {
		t.Fatal("the shared cache served a watch from before its history")
	}

	w := m.Private(ctx, "things/", start, 0)
	private := w.cache
	next := 1
	take := func(until int) {
		t.Helper()
		for next < until {
			events, ok := w.Take(ctx)
			if !ok {
				t.Fatalf("the watch ended at change %d", next)
			}
			for _, e := range events {
				if e.Type != storage.Put {
					continue
				}
				if want := fmt.Sprintf("things/t-%03d", next); e.KV.Key != want {
					t.Fatalf("got %s, want %s (each change once, in order)", e.KV.Key, want)
				}
				next++
			}
		}
	}
	take(40)
	waitFor(t, "the hand-over", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.cache == shared
	})
	private.mu.RLock()
	stopped := private.stopped
	private.mu.RUnlock()
	if !stopped {
		t.Error("the private cache still runs after the hand-over")
	}
	write(40, 60)
	take(60)
	if n := shared.Watchers(); n != 1 {
		t.Fatalf("the shared cache has %d watchers, want the handed-over one", n)
	}
	w.Stop()
	if n := shared.Watchers(); n != 0 {
		t.Errorf("after Stop the shared cache has %d watchers", n)
	}
}
