package watchcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/storage"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// ErrOverLimit means that a cache would take the caches' memory past their limit.
var ErrOverLimit = errors.New("watch cache memory limit reached")

// Options configure a server's caches.
type Options struct {
	// Disabled turns caching off: every read goes to etcd, every watch has its own
	// etcd watch.
	Disabled bool
	// MemoryLimit bounds the estimated memory of all caches, in bytes; 0 is no bound.
	MemoryLimit int64
	// IdleTimeout is how long a cache without watchers lives after its last read.
	IdleTimeout time.Duration
	// HistorySize is how many recent changes a cache keeps for watches that start in
	// the past.
	HistorySize int
	// ProgressInterval is how often an idle cache asks etcd how far it is (for watch
	// bookmarks); 0: never unasked.
	ProgressInterval time.Duration
	// Observe, if set, sees every change the caches' etcd watches deliver, in order,
	// on the cache's goroutine: it must not block.
	Observe func(storage.Event)
	// Registerer receives the caches' metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// SnapshotHold is the most a snapshot kept for a paged list may hold of values the
	// cache has since replaced or deleted (default DefaultSnapshotHold). A paged list
	// that takes long while its objects change (a storage migration's client path
	// rewrites every object it lists) would otherwise keep a second copy of the
	// resource: past this, the snapshot is let go, and the list's next pages are read
	// from etcd at its revision, as a server without the snapshot reads them.
	SnapshotHold int64
}

// Defaults for Options.
const (
	DefaultMemoryLimit  = 4 << 30
	DefaultIdleTimeout  = 10 * time.Minute
	DefaultHistorySize  = 8192
	DefaultSnapshotHold = 64 << 20
	// overLimitBackoff is how long a resource whose cache did not fit is read from
	// etcd before caching it is tried again.
	overLimitBackoff = time.Minute
	// sweepEvery is how often idle caches and old snapshots are collected.
	sweepEvery = 5 * time.Second
)

// Caches is the set of a server's watch caches, one per key prefix, started on first
// use by Get while Run runs. It is safe for concurrent use.
type Caches struct {
	st      *storage.Store
	metrics atomic.Pointer[metrics] // set by Run

	mu     sync.Mutex
	opts   Options
	ctx    context.Context // Run's; nil while not running
	caches map[string]*Cache
	over   map[string]time.Time // prefixes not cached until then
	// runs are the shared caches whose goroutines have not returned yet (stopped ones
	// included): Run joins them.
	runs map[*Cache]struct{}

	// bytes is the caches' memory. A cache changes it with its own mu held, so that
	// a reader who saw a cache reach a revision sees the figures of that revision.
	bytes atomic.Int64
}

// New returns the (not yet running) caches of st.
func New(st *storage.Store) *Caches {
	return &Caches{st: st, caches: map[string]*Cache{}, over: map[string]time.Time{}, runs: map[*Cache]struct{}{}}
}

// Run serves caches with opts until ctx is done, then stops them all and returns nil
// once every shared cache's goroutine has returned.
func (m *Caches) Run(ctx context.Context, opts Options) error {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.HistorySize <= 0 {
		opts.HistorySize = DefaultHistorySize
	}
	if opts.SnapshotHold <= 0 {
		opts.SnapshotHold = DefaultSnapshotHold
	}
	m.mu.Lock()
	m.opts, m.ctx = opts, ctx
	m.metrics.Store(newMetrics(opts.Registerer, opts.MemoryLimit, m))
	m.mu.Unlock()
	// A timer, not a retry: caches idle for IdleTimeout are swept.
	t := time.NewTicker(min(sweepEvery, opts.IdleTimeout/2))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.mu.Lock()
			m.ctx = nil
			all := m.all()
			m.mu.Unlock()
			for _, c := range all {
				c.stop(ctx.Err())
			}
			m.join()
			return nil
		case now := <-t.C:
			m.sweep(now)
		}
	}
}

// join waits for the goroutines of the shared caches; none starts once Run's
// context is done.
func (m *Caches) join() {
	m.mu.Lock()
	running := make([]*Cache, 0, len(m.runs))
	for c := range m.runs {
		running = append(running, c)
	}
	m.mu.Unlock()
	for _, c := range running {
		<-c.done
	}
}

func (m *Caches) all() []*Cache {
	out := make([]*Cache, 0, len(m.caches))
	for _, c := range m.caches {
		out = append(out, c)
	}
	return out
}

// Loading returns the prefixes of the running caches that have not loaded their
// objects yet, sorted.
func (m *Caches) Loading() []string {
	m.mu.Lock()
	all := m.all()
	m.mu.Unlock()
	var out []string
	for _, c := range all {
		select {
		case <-c.loaded:
		default:
			out = append(out, c.prefix)
		}
	}
	slices.Sort(out)
	return out
}

// Get returns the cache of prefix, starting it if need be; it may not be Ready yet.
// A cache started by Get loads the objects at revision from (if etcd still has it;
// else, and for 0, at the current one), so that a watch from there can join it. It
// returns nil when caches are not running or disabled, or the prefix's cache did not
// fit in memory lately: the caller reads etcd.
func (m *Caches) Get(prefix string, from int64) *Cache {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil || m.opts.Disabled {
		return nil
	}
	if until, ok := m.over[prefix]; ok {
		if time.Now().Before(until) {
			return nil
		}
		delete(m.over, prefix)
	}
	c := m.caches[prefix]
	if c == nil {
		c = newCache(prefix, m, true, m.opts.HistorySize, from)
		c.snapshotHold = m.opts.SnapshotHold
		ctx, cancel := context.WithCancel(m.ctx)
		c.cancel = cancel
		m.caches[prefix] = c
		m.runs[c] = struct{}{}
		c.start(ctx, m.st, m.opts, func() {
			m.mu.Lock()
			delete(m.runs, c)
			m.mu.Unlock()
		})
	}
	c.touch()
	return c
}

// Running returns the cache of prefix if one is running and has loaded its objects,
// without starting one or counting this as a use: for a reader that would take
// etcd's answer as well, and must not make the server cache what nobody else reads.
func (m *Caches) Running(prefix string) *Cache {
	m.mu.Lock()
	c := m.caches[prefix]
	m.mu.Unlock()
	if c == nil || !c.Ready() {
		return nil
	}
	return c
}

// Private starts a cache without state that relays the changes under prefix after
// revision from to one watcher, straight from etcd's history, and stops with it, or
// once it has handed the watcher over to the prefix's shared cache (when that cache's
// history covers what the watcher has yet to get): for a watch older than the shared
// cache's history, or while caching is off. It lives as long as the watcher,
// whatever ctx does after the call, and the watcher's Stop joins its goroutine. Idle,
// it asks etcd every progressInterval how far it is (0: never), for the watcher's
// bookmarks.
func (m *Caches) Private(ctx context.Context, prefix string, from int64, progressInterval time.Duration) *Watcher {
	opts := Options{ProgressInterval: progressInterval}
	c := newCache(prefix, m, false, 0, from)
	w := newWatcher(c, from)
	w.paced = true
	c.watchers[w] = struct{}{} // in before the first change arrives
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	c.start(cctx, m.st, opts, nil)
	return w
}

// Observe counts one read of resource answered from the cache (cached) or etcd.
func (m *Caches) Observe(prefix, verb string, cached bool) {
	mt := m.metrics.Load()
	if mt == nil {
		return
	}
	source := "etcd"
	if cached {
		source = "cache"
	}
	mt.reads.WithLabelValues(resourceLabel(prefix), verb, source).Inc()
}

// enforce evicts caches while their memory is past the limit, c (the one growing)
// last, and fails if c itself had to go.
func (m *Caches) enforce(c *Cache) error {
	m.mu.Lock()
	over := m.opts.MemoryLimit > 0 && m.bytes.Load() > m.opts.MemoryLimit
	var victims []*Cache
	if over {
		victims = m.victims(c)
	}
	m.mu.Unlock()
	for _, v := range victims {
		m.evict(v, "memory")
	}
	if over && len(victims) > 0 && victims[len(victims)-1] == c {
		return fmt.Errorf("%w (%d bytes)", ErrOverLimit, m.opts.MemoryLimit)
	}
	return nil
}

// victims picks the caches to stop to bring memory under the limit: the least recently
// used first, those with watchers after those without, c (the one growing) last.
// Called with m.mu held.
func (m *Caches) victims(c *Cache) []*Cache {
	cands := m.all()
	rank := func(x *Cache) int {
		switch {
		case x == c:
			return 2
		case x.Watchers() > 0:
			return 1
		}
		return 0
	}
	slices.SortFunc(cands, func(a, b *Cache) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return a.idleSince().Compare(b.idleSince())
	})
	var out []*Cache
	excess := m.bytes.Load() - m.opts.MemoryLimit
	for _, x := range cands {
		if excess <= 0 {
			break
		}
		out = append(out, x)
		x.mu.RLock()
		excess -= x.bytes
		x.mu.RUnlock()
	}
	return out
}

// evict stops c (its watchers end and watch again, from etcd) and reads its prefix
// from etcd for a while.
func (m *Caches) evict(c *Cache, reason string) {
	m.mu.Lock()
	if reason == "memory" {
		m.over[c.prefix] = time.Now().Add(overLimitBackoff)
	}
	mt, ctx := m.metrics.Load(), m.ctx
	m.mu.Unlock()
	if ctx != nil {
		klog.FromContext(ctx).V(2).Info("Watch cache stopped", "resource", c.resource, "reason", reason)
	}
	if mt != nil {
		mt.evictions.WithLabelValues(c.resource, reason).Inc()
	}
	c.stop(fmt.Errorf("evicted: %s", reason))
}

// remove forgets a stopped cache (which took its memory off the count).
func (m *Caches) remove(c *Cache) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.caches[c.prefix] == c {
		delete(m.caches, c.prefix)
	}
}

// sweep stops idle caches and forgets old snapshots.
func (m *Caches) sweep(now time.Time) {
	m.mu.Lock()
	all, idle := m.all(), m.opts.IdleTimeout
	m.mu.Unlock()
	for _, c := range all {
		c.expireSnapshots(now.Add(-snapshotTTL))
		if c.Watchers() == 0 && now.Sub(c.idleSince()) > idle {
			m.evict(c, "idle")
		}
	}
}

// Stats says what the caches hold.
type Stats struct {
	Caches   int
	Bytes    int64
	Objects  int
	Watchers int // fed by the shared caches (private feeds aside)
}

// Stats returns the caches' current figures.
func (m *Caches) Stats() Stats {
	m.mu.Lock()
	all, bytes := m.all(), m.bytes.Load()
	m.mu.Unlock()
	st := Stats{Caches: len(all), Bytes: bytes}
	for _, c := range all {
		c.mu.RLock()
		st.Objects += c.objects
		st.Watchers += len(c.watchers)
		c.mu.RUnlock()
	}
	return st
}
