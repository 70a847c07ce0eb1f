package store

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/registry/watchcache"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// recordingSink is a Sink that keeps what it was sent, and says on flushed how many
// events it held at each Flush.
type recordingSink struct {
	mu      sync.Mutex
	events  []watch.Event
	flushed chan int
}

func newRecordingSink() *recordingSink { return &recordingSink{flushed: make(chan int, 1024)} }

func (r *recordingSink) Send(ev watch.Event) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return true
}

func (r *recordingSink) Flush() bool {
	r.mu.Lock()
	n := len(r.events)
	r.mu.Unlock()
	r.flushed <- n
	return true
}

// waitFlushed waits for a Flush after which the sink holds at least n events.
func (r *recordingSink) waitFlushed(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-r.flushed:
			if got >= n {
				return
			}
		case <-deadline:
			t.Fatalf("no Flush after %d events", n)
		}
	}
}

// A Stream hands each change to its reader's Sink in the reader's goroutine and
// flushes before it waits for the next, so that a server writes each change as soon
// as it is sent; two streams of one version send the same SharedObject; Stop ends Run.
func TestStreamSendsEachChangeThenFlushes(t *testing.T) {
	ctx := t.Context()
	s, res := cachedStore(t, watchcache.Options{})
	start, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", "first", 0), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Both streams read the shared cache's events: a stream fed privately reads events
	// of its own, and builds its own objects of them.
	sharedCacheReady(t, s, res)
	opts := metav1.ListOptions{ResourceVersion: start.GetResourceVersion()}
	var sinks []*recordingSink
	var streams []*Stream
	done := make(chan struct{}, 2)
	for range 2 {
		st, err := s.Stream(ctx, Ref{Resource: res, Version: "v2"}, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		sink := newRecordingSink()
		sinks, streams = append(sinks, sink), append(streams, st)
		go func() {
			st.Run(sink)
			done <- struct{}{}
		}()
	}
	const changes = 5
	for i := range changes {
		if _, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", fmt.Sprintf("g%d", i), i), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, sink := range sinks {
			// Flushed with this change before the stream waits for the next.
			sink.waitFlushed(t, i+1)
		}
	}
	for _, st := range streams {
		st.Stop()
	}
	for range streams {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after Stop")
		}
	}
	for i := range changes {
		a, b := sinks[0].events[i], sinks[1].events[i]
		so, ok := a.Object.(*SharedObject)
		if a.Type != watch.Added || !ok {
			t.Fatalf("event %d: %s %T, want ADDED of a *SharedObject", i, a.Type, a.Object)
		}
		if so.GetName() != fmt.Sprintf("g%d", i) || so.GetAPIVersion() != "example.com/v2" {
			t.Fatalf("event %d: %s %s, want g%d in example.com/v2", i, so.GetAPIVersion(), so.GetName(), i)
		}
		if b.Object != a.Object {
			t.Fatalf("event %d: the two streams sent different objects", i)
		}
	}
}

// A paced Stream (WatchFlushInterval) flushes a change that came within its interval
// once the interval is out, though nothing comes after it: nothing else here would
// make it flush (the cache asks etcd for no progress, no bookmarks are due, and no
// read waits on the cache).
func TestPacedStreamFlushesTheLastChange(t *testing.T) {
	ctx := t.Context()
	s, res := uncachedStore(t)
	s.BookmarkInterval, s.WatchFlushInterval = 0, time.Second
	runCaches(t, s, watchcache.Options{})
	start, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", "first", 0), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Stream(ctx, Ref{Resource: res, Version: "v1"}, metav1.ListOptions{ResourceVersion: start.GetResourceVersion()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := newRecordingSink()
	done := make(chan struct{})
	go func() {
		st.Run(sink)
		close(done)
	}()
	// The first change is flushed at once: the stream was quiet. The second comes
	// within the interval after that flush, so the stream waits the interval out,
	// finds nothing more, and flushes it.
	for i := range 2 {
		if _, err := s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: "a"}, gadget("a", fmt.Sprintf("g%d", i), i), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		sink.waitFlushed(t, i+1)
	}
	st.Stop()
	<-done
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for i, ev := range sink.events {
		so, ok := ev.Object.(*SharedObject)
		if ev.Type != watch.Added || !ok || so.GetName() != fmt.Sprintf("g%d", i) {
			t.Fatalf("event %d: %s %T, want ADDED g%d", i, ev.Type, ev.Object, i)
		}
	}
	if len(sink.events) != 2 {
		t.Fatalf("sent %d events, want 2", len(sink.events))
	}
}
