package store

import (
	"hash/maphash"
	"sync"
)

// rewrittenCap bounds how many of its latest rewrites a store remembers.
const rewrittenCap = 1 << 16

// rewritten remembers the latest writes of the store's own rewrites, so that its
// watches know without decoding both versions that such a change only re-encoded its
// object (sameMeaning): a rewrite writes the bytes it re-encoded an object into only
// if the object is still at the revision it read. A change of the key from that
// revision to those bytes is such a write, whoever made it. A write is recorded before
// it is made (its watch event may come before the write's answer); one that fails
// matches no change. It is bounded, the oldest forgotten first; a forgotten one is
// decoded and compared, as another server's rewrite is. It is safe for concurrent use.
type rewritten struct {
	seed maphash.Seed
	mu   sync.Mutex
	last map[string]rewrite
	ring []string
	next int
}

// rewrite is one recorded write: from the revision read, to bytes of this hash.
type rewrite struct {
	from int64
	hash uint64
}

func newRewritten() *rewritten {
	return &rewritten{seed: maphash.MakeSeed(), last: make(map[string]rewrite), ring: make([]string, rewrittenCap)}
}

// add records that key is being rewritten from revision from to value.
func (r *rewritten) add(key string, from int64, value []byte) {
	h := maphash.Bytes(r.seed, value)
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.ring[r.next]; old != "" {
		delete(r.last, old) // a later rewrite of old, if any, is forgotten early: harmless
	}
	r.ring[r.next] = key
	r.next = (r.next + 1) % len(r.ring)
	r.last[key] = rewrite{from: from, hash: h}
}

// has reports whether the change of key from revision from to value is a recorded
// rewrite.
func (r *rewritten) has(key string, from int64, value []byte) bool {
	r.mu.Lock()
	w, ok := r.last[key]
	r.mu.Unlock()
	return ok && w.from == from && w.hash == maphash.Bytes(r.seed, value)
}
