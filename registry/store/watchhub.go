package store

import (
	"context"
	"strings"
	"sync"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	"k8s.io/klog/v2"
)

// A hub shares one etcd watch of a resource (all namespaces) among the watches served
// for it, as Kubernetes' watch cache does: each change is read from etcd once and
// decoded at most once, however many clients watch. It keeps the recent changes so
// that a watch starting a little in the past (an informer resuming, a list followed by
// a watch) joins without a watch of its own.
//
// A watch whose starting revision is older than what the shared hub holds gets a
// private hub of its own, started at that revision (etcd replays the history, or
// reports it compacted), so every watch sees exactly the changes after its revision.
type hub struct {
	store  *Store
	prefix string
	shared bool

	mu       sync.Mutex
	res      *registry.Resource // the newest definition registered, used to decode
	watchers map[*hubWatcher]struct{}
	// buf holds the changes after complete, oldest first: a watch from any revision
	// >= complete is served from it and what follows.
	buf      []*hubEvent
	complete int64
	stopped  bool
	cancel   context.CancelFunc
}

// hubBufferSize is how many recent changes a shared hub keeps for late joiners.
const hubBufferSize = 1024

// maxPending is how many changes a watch may fall behind before it is ended; its
// client then watches again from the last revision it saw (Kubernetes ends slow
// watchers the same way).
const maxPending = 10000

// hubEvent is one change, shared by every watch of the hub. Its objects are decoded on
// first use, once.
type hubEvent struct {
	typ  storage.EventType
	rev  int64
	kv   *storage.KeyValue
	prev *storage.KeyValue
	res  *registry.Resource
	err  error // for storage.Error

	curOnce, prevOnce sync.Once
	cur, prevObj      *registry.Object
	curErr, prevErr   error
}

// current returns the object after the change (Put only). Shared: do not modify.
func (e *hubEvent) current() (*registry.Object, error) {
	e.curOnce.Do(func() { e.cur, e.curErr = e.res.Decode(e.kv.Value, e.rev) })
	return e.cur, e.curErr
}

// previous returns the object before the change, with the change's revision as its
// resourceVersion (what a watch sends when it leaves a watcher's view). Shared: do not
// modify.
func (e *hubEvent) previous() (*registry.Object, error) {
	e.prevOnce.Do(func() { e.prevObj, e.prevErr = e.res.Decode(e.prev.Value, e.rev) })
	return e.prevObj, e.prevErr
}

// hubWatcher is one watch's queue of changes. The hub appends without ever blocking;
// the watch drains it.
type hubWatcher struct {
	// from is the revision the watch starts after: older changes are not its.
	from    int64
	mu      sync.Mutex
	pending []*hubEvent
	notify  chan struct{}
	ended   bool // no more changes will come (after pending)
}

func (w *hubWatcher) push(e *hubEvent) {
	if e.typ != storage.Error && e.rev <= w.from && (e.typ != storage.Progress || e.rev < w.from) {
		return
	}
	w.mu.Lock()
	if !w.ended {
		if len(w.pending) >= maxPending {
			w.ended = true // too slow: end the watch rather than buffer without bound
		} else {
			w.pending = append(w.pending, e)
		}
	}
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *hubWatcher) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// take waits for changes and returns them; ok is false once the queue has ended and is
// drained, or ctx is done.
func (w *hubWatcher) take(ctx context.Context) (events []*hubEvent, ok bool) {
	for {
		w.mu.Lock()
		events, w.pending = w.pending, nil
		ended := w.ended
		w.mu.Unlock()
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

// subscribe registers a watch of res that wants every change after revision from,
// and returns its queue and a function that ends the subscription.
func (s *Store) subscribe(ctx context.Context, res *registry.Resource, from int64) (*hubWatcher, func()) {
	prefix := res.Prefix("")
	w := &hubWatcher{from: from, notify: make(chan struct{}, 1)}
	s.hubsMu.Lock()
	h := s.hubs[prefix]
	if h != nil && !h.join(res, w, from) {
		// Too far behind the shared hub: a private one.
		s.hubsMu.Unlock()
		p := s.startHub(ctx, prefix, res, from, false, w)
		return w, func() { p.leave(w) }
	}
	if h == nil {
		h = s.startHub(ctx, prefix, res, from, true, w)
		s.hubs[prefix] = h
	}
	s.hubsMu.Unlock()
	return w, func() { h.leave(w) }
}

// testHookHubStarted, if set, is called by startHub once the hub runs.
var testHookHubStarted func(*hub)

// startHub starts a hub whose history is complete after revision from, with first as
// its first watch. first is in before the hub's first change arrives: joining after
// could come too late, when a replay from an old revision has already pushed more
// than hubBufferSize changes through it, and join would refuse it.
func (s *Store) startHub(ctx context.Context, prefix string, res *registry.Resource, from int64, shared bool, first *hubWatcher) *hub {
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &hub{store: s, prefix: prefix, shared: shared, res: res, watchers: map[*hubWatcher]struct{}{first: {}}, complete: from, cancel: cancel}
	events := s.storage.Watch(hctx, prefix, from, storage.WatchOptions{ProgressInterval: s.BookmarkInterval})
	go h.run(klog.NewContext(hctx, klog.FromContext(ctx).WithValues("watchHub", strings.TrimSuffix(prefix, "/"))), events)
	if testHookHubStarted != nil {
		testHookHubStarted(h)
	}
	return h
}

// join adds w if the hub can give it every change after from, replaying what it has
// buffered; it reports false, adding nothing, if from is older than the hub's history.
func (h *hub) join(res *registry.Resource, w *hubWatcher, from int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || from < h.complete {
		return false
	}
	h.res = res
	for _, e := range h.buf {
		if e.rev > from {
			w.push(e)
		}
	}
	h.watchers[w] = struct{}{}
	return true
}

// leave removes w; the last watch to leave stops the hub.
func (h *hub) leave(w *hubWatcher) {
	h.mu.Lock()
	delete(h.watchers, w)
	stop := len(h.watchers) == 0 && !h.stopped
	if stop {
		h.stopped = true
	}
	h.mu.Unlock()
	if stop {
		h.detach()
		h.cancel()
	}
}

// detach removes a shared hub from its store's map (if it is still the one there).
func (h *hub) detach() {
	if !h.shared {
		return
	}
	h.store.hubsMu.Lock()
	if h.store.hubs[h.prefix] == h {
		delete(h.store.hubs, h.prefix)
	}
	h.store.hubsMu.Unlock()
}

func (h *hub) run(ctx context.Context, events <-chan storage.Event) {
	for ev := range events {
		// What watchers see is what their clients will write back (an informer's
		// controller): updates can start from it (see recentObjects).
		switch ev.Type {
		case storage.Put:
			h.store.recent.Saw(ev.KV)
		case storage.Deleted:
			h.store.recent.Forget(ev.KV.Key)
		}
		h.mu.Lock()
		e := &hubEvent{typ: ev.Type, rev: ev.Revision, kv: ev.KV, prev: ev.Prev, res: h.res, err: ev.Err}
		if ev.Type == storage.Put || ev.Type == storage.Deleted {
			h.buf = append(h.buf, e)
			if len(h.buf) > hubBufferSize {
				h.complete = h.buf[0].rev
				h.buf = append(h.buf[:0:0], h.buf[1:]...)
			}
		}
		for w := range h.watchers {
			w.push(e)
		}
		failed := ev.Type == storage.Error
		if failed {
			h.stopped = true
		}
		h.mu.Unlock()
		if failed {
			klog.FromContext(ctx).V(2).Info("Shared watch ended by storage", "err", ev.Err)
			break
		}
	}
	// The storage watch is over (an error, or the last watch left): end every queue.
	h.mu.Lock()
	h.stopped = true
	for w := range h.watchers {
		w.end()
	}
	h.mu.Unlock()
	h.detach()
}
