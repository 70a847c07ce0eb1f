package watchcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/storage"
	"github.com/google/btree"
	"k8s.io/klog/v2"
)

// Sentinel errors.
var (
	// ErrStopped: the cache no longer follows etcd (it failed, was evicted, or its
	// server is stopping). The error wraps the reason.
	ErrStopped = errors.New("watch cache stopped")
	// ErrTooOld: a watch asked for changes older than the cache's history.
	ErrTooOld = errors.New("revision older than the watch cache's history")
	// ErrNotFresh: the cache did not reach the revision asked for in time.
	ErrNotFresh = errors.New("watch cache did not reach the revision in time")
)

const (
	// freshTimeout bounds how long a read waits for the cache to reach a revision
	// before it is answered from etcd instead.
	freshTimeout = 3 * time.Second
	// progressEvery is how often a waiting read asks etcd again for a progress
	// notification (etcd answers only a watch that has caught up).
	progressEvery = 100 * time.Millisecond
	// loadPage is how many keys one read of the initial load takes.
	loadPage = 5000
	// entryOverhead estimates the memory a cached object takes beyond its key and
	// value: the KeyValue, the B-tree's slot and node share.
	entryOverhead = 96
	// eventOverhead estimates the memory of one change in the history beyond the
	// previous value it keeps alive.
	eventOverhead = 128
)

// A Cache holds the objects under one key prefix, at a revision, and the recent
// changes to them, fed by one etcd watch. It is safe for concurrent use.
type Cache struct {
	prefix   string
	resource string // what metrics call it
	caches   *Caches
	// stateful caches hold the objects; a private cache only relays changes from a
	// revision on to its one watcher.
	stateful bool
	progress chan struct{}
	loaded   chan struct{} // closed once loaded, or stopped
	done     chan struct{} // closed once its goroutine has returned
	load1    sync.Once
	cancel   context.CancelFunc
	lastUsed atomic.Int64 // unix nanoseconds

	mu   sync.RWMutex
	tree *btree.BTreeG[*Entry]
	rev  int64 // the state is that of this revision
	// fresh is closed, and replaced, whenever rev moves.
	fresh   chan struct{}
	history history
	// complete is the revision after which history holds every change: a watch from
	// any revision at or after it can be served.
	complete  int64
	watchers  map[*Watcher]struct{}
	current   *Snapshot           // the snapshot of rev, if one was taken
	snapshots map[int64]*Snapshot // snapshots kept for paged lists
	// snapshotHold is Options.SnapshotHold: a kept snapshot holding more goes.
	snapshotHold int64
	bytes        int64 // estimated memory of the objects, the history and what kept snapshots hold
	objects      int
	stopped      bool
	err          error
}

func lessKey(a, b *Entry) bool { return a.Key < b.Key }

// newCache returns a cache of prefix: a stateful one loads it at revision from (0:
// the current one), a private one relays the changes after from.
func newCache(prefix string, caches *Caches, stateful bool, historySize int, from int64) *Cache {
	c := &Cache{
		prefix: prefix, resource: resourceLabel(prefix), caches: caches, stateful: stateful,
		rev: from, complete: from,
		progress: make(chan struct{}, 1), loaded: make(chan struct{}), done: make(chan struct{}),
		fresh: make(chan struct{}), history: newHistory(historySize),
		watchers: map[*Watcher]struct{}{}, snapshots: map[int64]*Snapshot{},
	}
	if stateful {
		c.tree = btree.NewG(32, lessKey)
	}
	c.touch()
	return c
}

// Prefix returns the key prefix the cache follows.
func (c *Cache) Prefix() string { return c.prefix }

// Ready reports whether the cache has loaded its objects and still follows etcd.
func (c *Cache) Ready() bool {
	select {
	case <-c.loaded:
	default:
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return !c.stopped
}

// WaitReady waits, a few seconds at most, for the cache to load, and reports whether
// it is ready.
func (c *Cache) WaitReady(ctx context.Context) bool {
	select {
	case <-c.loaded:
	default:
		t := time.NewTimer(freshTimeout)
		defer t.Stop()
		select {
		case <-c.loaded:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return c.Ready()
}

// Revision returns the revision the cache's state is at.
func (c *Cache) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

func (c *Cache) touch() { c.lastUsed.Store(time.Now().UnixNano()) }

func (c *Cache) idleSince() time.Time { return time.Unix(0, c.lastUsed.Load()) }

// run loads the cache (stateful ones) and applies etcd's changes from then on until
// ctx is done or the watch fails.
// start runs the cache on a goroutine of its own, which calls exited (if not nil) and
// closes done as it returns.
func (c *Cache) start(ctx context.Context, st *storage.Store, opts Options, exited func()) {
	go func() {
		defer close(c.done)
		c.run(ctx, st, opts)
		if exited != nil {
			exited()
		}
	}()
}

func (c *Cache) run(ctx context.Context, st *storage.Store, opts Options) {
	logger := klog.FromContext(ctx).WithValues("watchCache", c.resource)
	if c.stateful {
		if err := c.load(ctx, st); err != nil {
			c.stop(err)
			return
		}
		logger.V(3).Info("Watch cache loaded", "revision", c.Revision(), "objects", c.tree.Len())
	}
	c.load1.Do(func() { close(c.loaded) })
	for c.follow(ctx, st, opts) {
		// A private cache's watcher has maxPending changes to take: read nothing more
		// from etcd until it took them, then watch again from where the cache stands.
		if !c.waitRoom(ctx) {
			c.stop(ctx.Err())
			return
		}
	}
}

// follow applies the changes of one etcd watch from the cache's revision on. It
// returns true when it stopped watching because a private cache's watcher is full
// (the caller watches again once it has room), false once the cache has stopped.
//
// A private cache is paced by its one watcher, so that a watch that replays a long
// history, or whose client is slower than etcd's writes, holds at most maxPending
// changes in memory; the rest stays in etcd (package storage's watch receives only
// as fast as it is read, and this one is closed while the watcher is full).
func (c *Cache) follow(ctx context.Context, st *storage.Store, opts Options) bool {
	logger := klog.FromContext(ctx).WithValues("watchCache", c.resource)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wopts := storage.WatchOptions{ProgressInterval: opts.ProgressInterval, ProgressRequests: c.progress, WithoutPrevious: c.stateful}
	var batch []storage.Event
	for ev := range st.Watch(wctx, c.prefix, c.Revision(), wopts) {
		if opts.Observe != nil {
			opts.Observe(ev)
		}
		switch ev.Type {
		case storage.Put, storage.Deleted:
			batch = append(batch, ev)
			if !ev.BatchEnd {
				continue
			}
			c.apply(batch)
			batch = batch[:0]
			if c.stateful {
				continue
			}
			if c.handOver() {
				logger.V(3).Info("Private watch caught up; joined the shared cache", "revision", c.Revision())
				c.stop(context.Canceled)
				return false
			}
			if c.full() {
				return true
			}
		case storage.Progress:
			c.progressTo(ev)
		case storage.Error:
			logger.V(2).Info("Watch cache stopped by storage", "err", ev.Err)
			c.fail(ev)
			return false
		}
	}
	c.stop(ctx.Err())
	return false
}

// full reports whether a watcher of the cache has maxPending changes to take.
func (c *Cache) full() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for w := range c.watchers {
		if w.full() {
			return true
		}
	}
	return false
}

// waitRoom waits until no watcher of the cache is full; false if ctx ends first.
func (c *Cache) waitRoom(ctx context.Context) bool {
	for {
		c.mu.RLock()
		var wait *Watcher
		for w := range c.watchers {
			if w.full() {
				wait = w
				break
			}
		}
		c.mu.RUnlock()
		if wait == nil {
			return true
		}
		select {
		case <-wait.room:
		case <-ctx.Done():
			return false
		}
	}
}

// load reads every object under the prefix at one revision: the cache's starting
// revision if etcd still has it, else the current one.
func (c *Cache) load(ctx context.Context, st *storage.Store) error {
	rev := c.Revision()
	start := ""
	for {
		page, err := st.List(ctx, c.prefix, storage.ListOptions{Revision: rev, Limit: loadPage, Start: start, Uncounted: true})
		if errors.Is(err, storage.ErrCompacted) && start == "" {
			rev = 0
			continue
		}
		if err != nil {
			return fmt.Errorf("loading %s: %w", c.resource, err)
		}
		rev = page.Revision
		var added int64
		c.mu.Lock()
		for _, kv := range page.Items {
			e := &Entry{KeyValue: kv}
			c.tree.ReplaceOrInsert(e)
			added += e.size()
		}
		c.count(added)
		c.objects = c.tree.Len()
		c.mu.Unlock()
		if err := c.caches.enforce(c); err != nil {
			return err
		}
		if !page.More || len(page.Items) == 0 {
			break
		}
		start = page.Items[len(page.Items)-1].Key + "\x00"
	}
	c.mu.Lock()
	c.rev, c.complete = rev, rev
	c.mu.Unlock()
	return nil
}

func entrySize(kv *storage.KeyValue) int64 {
	return int64(len(kv.Key)+len(kv.Value)) + entryOverhead
}

// An Entry is one object a cache holds: its stored key and value, and the encoded
// form of it a reader last kept (Encoded).
type Entry struct {
	*storage.KeyValue
	enc atomic.Pointer[encoding]
}

type encoding struct {
	key  any
	data []byte
}

func keyOnly(key string) *Entry { return &Entry{KeyValue: &storage.KeyValue{Key: key}} }

// size estimates the memory the entry holds.
func (e *Entry) size() int64 {
	n := entrySize(e.KeyValue)
	if enc := e.enc.Load(); enc != nil {
		n += int64(len(enc.data))
	}
	return n
}

// Encoded returns the encoded form a reader kept under key, if it is the one kept.
func (e *Entry) Encoded(key any) ([]byte, bool) {
	if enc := e.enc.Load(); enc != nil && enc.key == key {
		return enc.data, true
	}
	return nil, false
}

// KeepEncoded keeps data, the object's encoded form under key (comparable), in place
// of the one kept before, and returns how many more bytes the entry holds. Readers
// give the difference to their cache's AddEncoded.
func (e *Entry) KeepEncoded(key any, data []byte) int64 {
	old := e.enc.Swap(&encoding{key: key, data: data})
	delta := int64(len(data))
	if old != nil {
		delta -= int64(len(old.data))
	}
	return delta
}

// AddEncoded adds delta bytes of kept encodings to the cache's memory.
func (c *Cache) AddEncoded(delta int64) {
	if delta == 0 {
		return
	}
	c.mu.Lock()
	stopped := c.stopped
	c.count(delta)
	c.mu.Unlock()
	if !stopped {
		_ = c.caches.enforce(c)
	}
}

// apply applies the changes etcd sent together (whole revisions), and hands them to
// the watchers.
func (c *Cache) apply(batch []storage.Event) {
	var delta int64
	c.mu.Lock()
	for i := range batch {
		ev := &batch[i]
		e := &Event{Type: ev.Type, Rev: ev.Revision, KV: ev.KV, Prev: ev.Prev}
		if c.stateful {
			// The previous state is the cached one: the cache has applied every change.
			var old *Entry
			var had bool
			if ev.Type == storage.Put {
				old, had = c.tree.ReplaceOrInsert(&Entry{KeyValue: ev.KV})
				delta += entrySize(ev.KV)
			} else {
				old, had = c.tree.Delete(keyOnly(ev.KV.Key))
			}
			e.Prev = nil
			if had {
				e.Prev = old.KeyValue
				if s := c.holder(old); s != nil {
					s.held += old.size() // alive while the snapshot is kept
					if c.snapshotHold > 0 && s.held > c.snapshotHold {
						c.dropSnapshot(s)
					}
				} else {
					delta -= old.size()
				}
			}
		}
		if c.stateful { // a private cache relays, and keeps no history
			delta += eventSize(e)
			if evicted := c.history.push(e); evicted != nil {
				c.complete = evicted.Rev
				delta -= eventSize(evicted)
			}
		}
		for w := range c.watchers {
			w.push(e)
		}
	}
	if c.stateful {
		c.objects = c.tree.Len()
		c.count(delta) // before the revision moves: see Caches.bytes
	}
	c.advance(batch[len(batch)-1].Revision)
	c.mu.Unlock()
	if c.stateful {
		_ = c.caches.enforce(c)
	}
}

// count adds delta bytes to the memory of a stateful cache and to the caches' count,
// unless the cache stopped (its memory left the count then). Called with c.mu held.
func (c *Cache) count(delta int64) {
	if c.stateful && !c.stopped {
		c.bytes += delta
		c.caches.bytes.Add(delta)
	}
}

// eventSize estimates what a change in the history keeps alive: the previous value
// is no longer in the state.
func eventSize(e *Event) int64 {
	n := int64(eventOverhead)
	if e.Prev != nil {
		n += entrySize(e.Prev)
	}
	return n
}

// advance moves the cache's revision to rev (if newer) and wakes the readers waiting
// for it. Called with c.mu held.
func (c *Cache) advance(rev int64) {
	if rev <= c.rev {
		return
	}
	c.rev = rev
	c.current = nil
	close(c.fresh)
	c.fresh = make(chan struct{})
}

// progressTo records that etcd has sent every change up to ev.Rev, and tells the
// watchers (for their bookmarks).
func (c *Cache) progressTo(ev storage.Event) {
	e := &Event{Type: storage.Progress, Rev: ev.Revision}
	c.mu.Lock()
	c.advance(ev.Revision)
	for w := range c.watchers {
		w.push(e)
	}
	c.mu.Unlock()
}

// fail ends every watcher with the storage error and stops the cache.
func (c *Cache) fail(ev storage.Event) {
	e := &Event{Type: storage.Error, Rev: ev.Revision, Err: ev.Err}
	c.mu.Lock()
	for w := range c.watchers {
		w.push(e)
	}
	c.mu.Unlock()
	c.stop(ev.Err)
}

// stop ends the cache: its watch, its watchers' queues, its place in its Caches.
func (c *Cache) stop(reason error) {
	if reason == nil {
		reason = context.Canceled
	}
	c.mu.Lock()
	already := c.stopped
	if !already {
		c.stopped, c.err = true, reason
		for w := range c.watchers {
			w.end()
		}
		close(c.fresh)
		c.fresh = make(chan struct{})
	}
	c.caches.bytes.Add(-c.bytes) // only a stateful cache counts any
	c.bytes = 0
	c.mu.Unlock()
	if already {
		return
	}
	c.load1.Do(func() { close(c.loaded) })
	if c.cancel != nil {
		c.cancel()
	}
	if c.stateful {
		c.caches.remove(c)
	}
}

func (c *Cache) stoppedErr() error {
	return fmt.Errorf("%w: %w", ErrStopped, c.err)
}

// Watch returns a watcher of every change after revision from: ErrTooOld if the
// cache's history does not reach back that far, ErrStopped if the cache stopped.
func (c *Cache) Watch(from int64) (*Watcher, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, c.stoppedErr()
	}
	if from < c.complete {
		return nil, fmt.Errorf("%w: %d is before %d", ErrTooOld, from, c.complete)
	}
	w := newWatcher(c, from)
	c.history.after(from, w.push)
	c.watchers[w] = struct{}{}
	c.touch()
	return w, nil
}

// leave removes w; a private cache stops with its last watcher.
// handOver moves the watcher of a private cache to the prefix's shared cache once that
// cache's history covers every change after what the private one has relayed: from
// then on the shared cache serves it, and the private etcd watch (which reads every
// change's previous value from etcd) can end. It reports whether it moved it; the
// caller then stops the private cache, which no longer holds the watcher.
func (c *Cache) handOver() bool {
	shared := c.caches.Running(c.prefix)
	if shared == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.watchers) != 1 || c.stopped {
		return false
	}
	for w := range c.watchers {
		if !shared.adopt(w, c.rev) {
			return false
		}
		delete(c.watchers, w)
	}
	return true
}

// adopt makes w, which has every change up to rev, a watcher of c from rev on, if c's
// history holds every change after rev. Changes c has not seen yet reach w as they
// come; those up to rev that c has yet to see are not w's (its start filters them).
func (c *Cache) adopt(w *Watcher, rev int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || rev < c.complete {
		return false
	}
	w.rebase(c, rev)
	c.history.after(rev, w.push)
	c.watchers[w] = struct{}{}
	return true
}

func (c *Cache) leave(w *Watcher) {
	c.mu.Lock()
	delete(c.watchers, w)
	last := len(c.watchers) == 0
	c.mu.Unlock()
	c.touch()
	if last && !c.stateful {
		c.stop(context.Canceled)
	}
}

// Watchers returns how many watchers the cache feeds.
func (c *Cache) Watchers() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.watchers)
}

// WaitFresh returns once the cache has reached revision rev: ErrNotFresh if it does not
// within a few seconds, ErrStopped if it stops, ctx's error if ctx ends first. While it
// waits it asks etcd for progress notifications, which move the cache's revision when
// nothing under its prefix changes.
func (c *Cache) WaitFresh(ctx context.Context, rev int64) error {
	var timeout, tick <-chan time.Time
	for {
		c.mu.RLock()
		cur, fresh, stopped := c.rev, c.fresh, c.stopped
		c.mu.RUnlock()
		switch {
		case stopped:
			return c.stoppedErr()
		case cur >= rev:
			return nil
		}
		if timeout == nil {
			t := time.NewTimer(freshTimeout)
			defer t.Stop()
			// A protocol timer, not a retry: while a read waits for the cache to
			// reach a revision, etcd is asked for its progress.
			k := time.NewTicker(progressEvery)
			defer k.Stop()
			timeout, tick = t.C, k.C
		}
		select {
		case c.progress <- struct{}{}:
		default:
		}
		select {
		case <-fresh:
		case <-tick:
		case <-timeout:
			return fmt.Errorf("%w: at %d, waited for %d", ErrNotFresh, cur, rev)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
