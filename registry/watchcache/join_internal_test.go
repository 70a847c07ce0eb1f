package watchcache

import (
	"context"
	"testing"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/storage"
)

// Run returns only once the goroutine of every shared cache has, the ones it stopped
// while running (a cache the sweep found idle) as well as those it stops at the end;
// a private watcher's Stop returns only once its cache's goroutine has.
func TestCachesAreJoined(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	st := storage.New(etcdtest.Start(t), "/join")
	if _, err := st.Create(ctx, "things/a", []byte("v")); err != nil {
		t.Fatal(err)
	}
	m := New(st)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, Options{}) }()
	var first *Cache
	waitFor(t, "a ready cache", func() bool { first = m.Get("things/", 0); return first != nil && first.WaitReady(ctx) })
	first.stop(context.Canceled) // as the sweep stops an idle cache
	second := m.Get("others/", 0)
	waitFor(t, "a second cache", func() bool { second = m.Get("others/", 0); return second != nil })

	w := m.Private(ctx, "things/", 1, 0)
	private := w.cache
	w.Stop()
	select {
	case <-private.done:
	default:
		t.Error("Stop returned while the private cache's goroutine ran")
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Cache{"stopped while running": first, "stopped at the end": second} {
		select {
		case <-c.done:
		default:
			t.Errorf("Run returned while the goroutine of the cache %s ran", name)
		}
	}
}
