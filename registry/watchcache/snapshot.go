package watchcache

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/storage"
	"github.com/google/btree"
)

const (
	// maxSnapshots is how many snapshots of paged lists a cache keeps.
	maxSnapshots = 32
	// snapshotTTL is how long a kept snapshot outlives its last use.
	snapshotTTL = 75 * time.Second
)

// A Snapshot is a cache's state at one revision. It never changes, and is safe for
// concurrent use.
type Snapshot struct {
	// Rev is the revision of the state.
	Rev  int64
	tree *btree.BTreeG[*Entry]

	mu   sync.Mutex
	flat map[string][]*Entry // Items' answers, by prefix
	used atomic.Int64        // unix nanoseconds

	// held is the memory of the entries the cache replaced or deleted since Rev that
	// this snapshot, kept, keeps alive (it is the newest kept one holding them):
	// counted in the cache's memory until the snapshot goes. Guarded by the cache's mu.
	held int64
}

// Items returns the objects whose keys start with prefix, in key order. The slice
// and its values are shared: never change them.
func (s *Snapshot) Items(prefix string) []*Entry {
	s.used.Store(time.Now().UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if items, ok := s.flat[prefix]; ok {
		return items
	}
	var items []*Entry
	visit := func(kv *Entry) bool {
		items = append(items, kv)
		return true
	}
	if end := storage.PrefixEnd(prefix); end != "\x00" {
		s.tree.AscendRange(keyOnly(prefix), keyOnly(end), visit)
	} else {
		s.tree.AscendGreaterOrEqual(keyOnly(prefix), visit)
	}
	if s.flat == nil {
		s.flat = map[string][]*Entry{}
	}
	s.flat[prefix] = items
	return items
}

// Len returns how many objects the state holds.
func (s *Snapshot) Len() int { return s.tree.Len() }

// Page returns up to limit objects whose keys start with prefix, from the first at
// or after start, in key order, and whether more follow: in time proportional to the
// page, however many objects the prefix has. The values are shared: never change
// them.
func (s *Snapshot) Page(prefix, start string, limit int) (items []*Entry, more bool) {
	from := max(prefix, start)
	end := storage.PrefixEnd(prefix)
	visit := func(kv *Entry) bool {
		if len(items) == limit {
			more = true
			return false
		}
		items = append(items, kv)
		return true
	}
	if end != "\x00" {
		s.tree.AscendRange(keyOnly(from), keyOnly(end), visit)
	} else {
		s.tree.AscendGreaterOrEqual(keyOnly(from), visit)
	}
	return items, more
}

// Search returns the index of the first of items whose key is at or after key.
func Search(items []*Entry, key string) int {
	return sort.Search(len(items), func(i int) bool { return items[i].Key >= key })
}

// Snapshot returns the cache's state at its current revision. It fails with
// ErrStopped once the cache stopped.
func (c *Cache) Snapshot() (*Snapshot, error) {
	c.touch()
	c.mu.RLock()
	s, stopped := c.current, c.stopped
	c.mu.RUnlock()
	if stopped {
		return nil, c.stoppedErr()
	}
	if s != nil {
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == nil {
		// Clone is constant-time: the tree copies the nodes it changes from now on.
		c.current = &Snapshot{Rev: c.rev, tree: c.tree.Clone()}
	}
	return c.current, nil
}

// Keep keeps s for the continue tokens of a paged list, for a while after its last use.
func (c *Cache) Keep(s *Snapshot) {
	s.used.Store(time.Now().UnixNano())
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.snapshots[s.Rev]; ok && old != s {
		c.dropSnapshot(old)
	}
	c.snapshots[s.Rev] = s
	if len(c.snapshots) > maxSnapshots {
		var oldest *Snapshot
		for _, k := range c.snapshots {
			if oldest == nil || k.used.Load() < oldest.used.Load() {
				oldest = k
			}
		}
		c.dropSnapshot(oldest)
	}
}

// dropSnapshot forgets kept snapshot s, and the memory it held leaves the count.
// Called with c.mu held.
func (c *Cache) dropSnapshot(s *Snapshot) {
	delete(c.snapshots, s.Rev)
	c.count(-s.held)
	s.held = 0
}

// holder returns the newest kept snapshot that holds old, an entry the cache is
// replacing or deleting, or nil. Called with c.mu held.
func (c *Cache) holder(old *Entry) *Snapshot {
	var h *Snapshot
	for _, s := range c.snapshots {
		if s.Rev >= old.Revision && (h == nil || s.Rev > h.Rev) {
			h = s
		}
	}
	return h
}

// SnapshotAt returns the state at revision rev if the cache has it: a kept snapshot,
// or its current state if it is at rev.
func (c *Cache) SnapshotAt(rev int64) (*Snapshot, bool) {
	c.mu.RLock()
	s, ok := c.snapshots[rev]
	current := c.rev == rev && !c.stopped
	c.mu.RUnlock()
	if ok {
		s.used.Store(time.Now().UnixNano())
		return s, true
	}
	if current {
		if s, err := c.Snapshot(); err == nil && s.Rev == rev {
			return s, true
		}
	}
	return nil, false
}

// expireSnapshots forgets kept snapshots unused since before.
func (c *Cache) expireSnapshots(before time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.snapshots {
		if s.used.Load() < before.UnixNano() {
			c.dropSnapshot(s)
		}
	}
}
