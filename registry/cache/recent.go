package cache

import (
	"sync"
	"sync/atomic"

	"github.com/concordproject/concord/storage"
	"k8s.io/utils/lru"
)

const (
	// recentObjectsSize is how many objects Recent remembers.
	recentObjectsSize = 16384
	// recentObjectsBytes bounds the stored bytes it keeps; the least recently used
	// objects go first.
	recentObjectsBytes = 64 << 20
	// recentMaxValue is the largest stored value it keeps; larger objects are read
	// again when updated.
	recentMaxValue = 128 << 10
)

// Recent remembers the stored bytes and revision of objects this server has
// lately read, written or seen change in a shared watch, so that an update can start
// from them instead of reading etcd first: a client that lists, gets or watches
// objects and then writes them back (a storage migrator, kubectl edit, a controller
// fed by an informer) costs one etcd round trip per write instead of two.
//
// An entry may be stale: another server may have written the object since. Update
// therefore trusts an entry only for a write conditional on the entry's revision
// (which fails if the object moved on); any other outcome computed from an entry (no
// change to write, a conflict, a failed precondition) is computed again from a fresh
// read. Entries are immutable: callers never change a returned KeyValue.
type Recent struct {
	mu    sync.Mutex
	cache *lru.Cache
	// bytes is the size of the values held; the cache's eviction callback, which
	// runs under the cache's own lock, lowers it.
	bytes atomic.Int64
}

// NewRecent returns an empty cache of recently seen objects.
func NewRecent() *Recent {
	r := &Recent{}
	r.cache = lru.NewWithEvictionFunc(recentObjectsSize, func(_ lru.Key, v interface{}) {
		r.bytes.Add(-int64(len(v.(*storage.KeyValue).Value)))
	})
	return r
}

// Get returns the remembered state of key, or nil.
func (r *Recent) Get(key string) *storage.KeyValue {
	if v, ok := r.cache.Get(key); ok {
		return v.(*storage.KeyValue)
	}
	return nil
}

// Saw remembers kv, the state of kv.Key at kv.Revision, unless a newer one is known.
func (r *Recent) Saw(kv *storage.KeyValue) {
	if len(kv.Value) > recentMaxValue {
		r.Forget(kv.Key)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.cache.Get(kv.Key); ok {
		old := v.(*storage.KeyValue)
		if old.Revision >= kv.Revision {
			return
		}
		r.bytes.Add(-int64(len(old.Value))) // replaced below, which evicts nothing
	}
	r.cache.Add(kv.Key, kv)
	r.bytes.Add(int64(len(kv.Value)))
	for r.bytes.Load() > recentObjectsBytes && r.cache.Len() > 0 {
		r.cache.RemoveOldest()
	}
}

// Wrote remembers that key now holds value at revision rev.
func (r *Recent) Wrote(key string, value []byte, rev int64) {
	r.Saw(&storage.KeyValue{Key: key, Value: value, Revision: rev})
}

// Forget drops what is known of key (it was deleted).
func (r *Recent) Forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cache.Remove(key)
}
