package watchcache

import (
	"context"

	"sync"

	"github.com/concordproject/concord/storage"
)

// maxPending is how many changes a watcher of a shared cache may fall behind before it
// is ended; its client then watches again from the last revision it saw (Kubernetes
// ends slow watchers the same way). A private cache stops reading etcd instead while
// its watcher has that many.
const maxPending = 10000

// A Watcher is one watch's queue of a cache's changes after a revision. The cache
// appends without ever blocking (a private one pauses its reading of etcd instead);
// the watch drains it with Take. Stop it when done.
type Watcher struct {
	mu sync.Mutex
	// cache is the cache it is a watcher of: a private one may hand it over to the
	// shared one (Cache.handOver).
	cache *Cache
	// from is the revision the watch starts after: older changes are not its.
	from    int64
	pending []*Event
	notify  chan struct{}
	ended   bool // no more changes will come (after pending)
	// paced: the watcher of a private cache, which stops reading etcd while the
	// watcher is full (Cache.follow) instead of ending it; room wakes that cache.
	paced bool
	room  chan struct{}
}

func newWatcher(c *Cache, from int64) *Watcher {
	return &Watcher{cache: c, from: from, notify: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// full reports whether w has maxPending changes to take.
func (w *Watcher) full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending) >= maxPending
}

// push queues e unless it is not the watcher's (older than its start). A progress
// notification at the start revision itself is kept: it tells an idle watch where it
// stands.
func (w *Watcher) push(e *Event) {
	w.mu.Lock()
	if e.Type != storage.Error && e.Rev <= w.from && (e.Type != storage.Progress || e.Rev < w.from) {
		w.mu.Unlock()
		return
	}
	if !w.ended {
		if len(w.pending) >= maxPending && !w.paced {
			w.ended = true // too slow: end the watch rather than buffer without bound
		} else {
			w.pending = append(w.pending, e)
		}
	}
	w.mu.Unlock()
	w.wake()
}

func (w *Watcher) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	w.wake()
}

func (w *Watcher) wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// Take waits for changes and returns them in revision order; ok is false once the
// queue has ended and is drained (the cache stopped, or the watcher fell too far
// behind), or ctx is done. A storage failure arrives as an Error event, last.
func (w *Watcher) Take(ctx context.Context) (events []*Event, ok bool) {
	for {
		events, ended := w.TakeReady()
		if len(events) > 0 {
			return events, true
		}
		if ended {
			return nil, false
		}
		select {
		case <-w.notify:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// TakeReady returns the changes queued now, without waiting; ended reports that no
// more will come after them.
func (w *Watcher) TakeReady() (events []*Event, ended bool) {
	w.mu.Lock()
	events, w.pending = w.pending, nil
	ended = w.ended
	w.mu.Unlock()
	if len(events) > 0 {
		select {
		case w.room <- struct{}{}:
		default:
		}
	}
	return events, ended
}

// rebase makes w a watcher of c, for the changes after rev.
func (w *Watcher) rebase(c *Cache, rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cache, w.from, w.paced = c, rev, false
}

// Stop removes the watcher from its cache. A private cache stops with its watcher,
// and Stop returns once its goroutine has.
func (w *Watcher) Stop() {
	for {
		w.mu.Lock()
		c := w.cache
		w.mu.Unlock()
		c.leave(w)
		if !c.stateful {
			<-c.done
		}
		// A private cache may have handed w over meanwhile: leave that one too.
		w.mu.Lock()
		moved := w.cache != c
		w.mu.Unlock()
		if !moved {
			return
		}
	}
}
