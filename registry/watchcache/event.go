package watchcache

import (
	"sync"
	"weak"

	"github.com/concordproject/concord/storage"
)

// Event is one change seen by a cache, shared by every watcher it reaches: never change
// one. Readers that derive something costly from it (a decoded object) keep it in the
// event's memo, so that it is derived once however many watchers read it.
type Event struct {
	Type storage.EventType // Put, Deleted, Progress or Error
	Rev  int64
	// KV is the object after the change (Put), or the deleted key (Deleted).
	KV *storage.KeyValue
	// Prev is the object before the change: nil for a creation.
	Prev *storage.KeyValue
	Err  error // Error only

	memoMu sync.Mutex
	memo   map[any]*memoCell
	weak   map[any]any // of *weakCell[T]
}

type memoCell struct {
	once sync.Once
	v    any
	err  error
}

// Memo returns what build returns for key, calling build once per key and event
// however many goroutines ask at the same time.
func (e *Event) Memo(key any, build func() (any, error)) (any, error) {
	e.memoMu.Lock()
	if e.memo == nil {
		e.memo = map[any]*memoCell{}
	}
	c := e.memo[key]
	if c == nil {
		c = &memoCell{}
		e.memo[key] = c
	}
	e.memoMu.Unlock()
	c.once.Do(func() { c.v, c.err = build() })
	return c.v, c.err
}

// weakCell is a value of MemoWeak: held weakly, built again once collected.
type weakCell[T any] struct {
	mu  sync.Mutex
	p   weak.Pointer[T]
	err error
}

// MemoWeak is Memo for a value worth keeping only while some reader still uses it,
// such as a decoded object: the event holds it weakly, so that the cache's history of
// recent changes does not keep every change's derived values alive. While any reader
// holds the value, every reader gets the same one; once it has been collected, the
// next reader builds it again. A failed build is kept (errors are small).
func MemoWeak[T any](e *Event, key any, build func() (*T, error)) (*T, error) {
	e.memoMu.Lock()
	if e.weak == nil {
		e.weak = map[any]any{}
	}
	c, _ := e.weak[key].(*weakCell[T])
	if c == nil {
		c = &weakCell[T]{}
		e.weak[key] = c
	}
	e.memoMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	if v := c.p.Value(); v != nil {
		return v, nil
	}
	v, err := build()
	if err != nil {
		c.err = err
		return nil, err
	}
	c.p = weak.Make(v)
	return v, nil
}

// history is a ring of the most recent changes, oldest first.
type history struct {
	buf   []*Event
	start int
	n     int
}

func newHistory(size int) history { return history{buf: make([]*Event, size)} }

// push appends e and returns the event it evicted, if the ring was full.
func (h *history) push(e *Event) (evicted *Event) {
	if h.n == len(h.buf) {
		evicted = h.buf[h.start]
		h.buf[h.start] = e
		h.start = (h.start + 1) % len(h.buf)
		return evicted
	}
	h.buf[(h.start+h.n)%len(h.buf)] = e
	h.n++
	return nil
}

// after calls fn for every held change newer than rev, oldest first.
func (h *history) after(rev int64, fn func(*Event)) {
	for i := 0; i < h.n; i++ {
		if e := h.buf[(h.start+i)%len(h.buf)]; e.Rev > rev {
			fn(e)
		}
	}
}
