package watchcache

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/storage"
)

// A private watch whose client does not keep up holds at most about maxPending
// changes: its cache stops reading etcd while its watcher is full, and watches again
// from where it stood once the watcher has taken them. The watcher is never ended for
// falling behind, and gets every change once, in order.
func TestPrivateWatchIsPaced(t *testing.T) {
	ctx := t.Context()
	st, m := runCaches(t, "/paced", Options{})
	start, err := st.Create(ctx, "things/start", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	const n = maxPending*2 + 500
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < n; i += 16 {
				if _, err := st.Create(ctx, fmt.Sprintf("things/t-%05d", i), []byte("v")); err != nil {
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

	w := m.Private(ctx, "things/", start, 0)
	defer w.Stop()
	waitFor(t, "a full watcher", w.full)
	// etcd sends a watch that catches up at most 1,000 revisions at a time (one
	// change each here): what the cache read before it paused. A cache that did not
	// pause would go on reading the whole history into the watcher meanwhile.
	time.Sleep(300 * time.Millisecond)
	w.mu.Lock()
	held := len(w.pending)
	w.mu.Unlock()
	if held > maxPending+1000 {
		t.Fatalf("the watcher holds %d changes, want at most %d", held, maxPending+1000)
	}
	seen := map[string]bool{}
	last := start
	for len(seen) < n {
		events, ok := w.Take(ctx)
		if !ok {
			t.Fatalf("the watch ended after %d of %d changes", len(seen), n)
		}
		for _, e := range events {
			if e.Type != storage.Put {
				continue
			}
			if e.Rev <= last || seen[e.KV.Key] {
				t.Fatalf("%s at revision %d after %d: each change once, in order", e.KV.Key, e.Rev, last)
			}
			seen[e.KV.Key], last = true, e.Rev
		}
	}
}
