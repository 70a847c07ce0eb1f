package garbagecollector

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// followed is what a monitor holds of its resource's objects, and its store for
// client-go's Reflector: the reflector lists and watches, and each change it stores
// is observed by the graph before the reflector reads the next, so the monitor's
// watch goes no faster than the graph (and etcd keeps what it has not sent).
//
// The collector follows every object of every resource, so this is most of what it
// holds: it is kept where Go's collector has nothing to trace. An object is 16 bytes
// of numbers in one slice; the names, uids and resourceVersions are bytes in one
// arena; the index by namespace and name is a table of slot numbers; namespaces are
// interned. Only an object that has owners, finalizers or a deletion keeps them
// beside it (rels). An object is read back as a monitored, made on each read.
type followed struct {
	// observe is called with each change stored, outside the lock, in the
	// reflector's goroutine (old is nil for an addition).
	observe func(typ changeType, obj, old metav1.Object)

	mu         sync.RWMutex
	records    []keptObject
	free       []uint32 // slots of removed records
	index      []uint32 // open addressing by namespace and name: slot+1, 0 empty
	used       int      // records in the index
	arena      []byte
	garbage    int // bytes of the arena no record uses
	rels       map[uint32]*relations
	namespaces nameTable
	seed       maphash.Seed

	synced atomic.Bool // the first list is stored
}

// keptObject is one object: its namespace's slot in the table, and where its name, uid
// and resourceVersion are in the arena (names are at most 253 bytes, uids and
// resourceVersions far less than 64 KiB; the arena stays under 4 GiB up to tens of
// millions of objects). nameLen 0 marks a free slot.
type keptObject struct {
	off     uint32
	ns      uint32
	nameLen uint16
	uidLen  uint16
	rvLen   uint16
}

func newFollowed(observe func(typ changeType, obj, old metav1.Object)) *followed {
	return &followed{observe: observe, index: make([]uint32, 64), rels: map[uint32]*relations{},
		namespaces: newNameTable(), seed: maphash.MakeSeed()}
}

// Add stores an object the reflector listed or watched.
func (f *followed) Add(obj interface{}) error { f.store(obj); return nil }

// Update stores an object the reflector watched.
func (f *followed) Update(obj interface{}) error { f.store(obj); return nil }

// Delete removes an object the reflector watched go.
func (f *followed) Delete(obj interface{}) error {
	m, ok := kept(obj)
	if !ok {
		return nil
	}
	if old := f.remove(m.namespace, m.GetName()); old != nil {
		f.observe(deleted, old, nil)
	}
	return nil
}

var _ cache.TransformingStore = (*followed)(nil)

// Transformer is what the reflector keeps of each object of a watch-list's starting
// state until the state is whole and it calls Replace: the metadata this store keeps,
// not the objects.
func (f *followed) Transformer() cache.TransformFunc { return metadataOnly }

// kept returns what the store keeps of obj: the reflector hands it objects as the
// store reads them, or transformed already (a watch-list's starting state).
func kept(obj interface{}) (*monitored, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, _ := metadataOnly(obj)
	o, ok := m.(*monitored)
	return o, ok
}

// Replace stores a list: its objects are stored (added or updated), and those the
// store held that it does not have are removed as deleted.
func (f *followed) Replace(list []interface{}, _ string) error {
	f.mu.RLock()
	listed := make([]uint64, (len(f.records)+63)/64)
	f.mu.RUnlock()
	for _, obj := range list {
		if slot, ok := f.store(obj); ok && int(slot)/64 < len(listed) {
			listed[slot/64] |= 1 << (slot % 64)
		}
	}
	for _, gone := range f.unlisted(listed) {
		if old := f.remove(gone.GetNamespace(), gone.GetName()); old != nil {
			f.observe(deleted, old, nil)
		}
	}
	f.synced.Store(true)
	return nil
}

// Resync has nothing to do: the store keeps no queue.
func (f *followed) Resync() error { return nil }

// unlisted returns the objects held that listed does not mark; the slots past it
// were taken by the list itself.
func (f *followed) unlisted(listed []uint64) []*monitored {
	return f.collect(func(slot uint32) bool {
		return int(slot)/64 < len(listed) && listed[slot/64]&(1<<(slot%64)) == 0
	})
}

// list returns every object held.
func (f *followed) list() []*monitored {
	return f.collect(func(uint32) bool { return true })
}

func (f *followed) collect(keep func(slot uint32) bool) []*monitored {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []*monitored
	for i := range f.records {
		if slot := uint32(i); f.records[i].nameLen != 0 && keep(slot) {
			out = append(out, f.read(slot))
		}
	}
	return out
}

// store stores obj and has the graph observe it; it returns obj's slot.
func (f *followed) store(obj interface{}) (uint32, bool) {
	m, ok := kept(obj)
	if !ok {
		return 0, false
	}
	f.mu.Lock()
	slot, found := f.find(m.namespace, m.GetName())
	var old *monitored
	if found {
		old = f.read(slot)
		prev := f.records[slot]
		f.release(slot)
		f.write(slot, m)
		// Released after the write: the namespace keeps its number (the index
		// hashes it) while the object is rewritten.
		f.namespaces.release(prev.ns)
	} else {
		slot = f.allocate()
		f.write(slot, m)
		f.insert(slot)
	}
	f.mu.Unlock()
	switch {
	case old == nil:
		f.observe(added, m, nil)
	case old.GetUID() != m.GetUID():
		// Deleted and made again under its name while the reflector listed again.
		f.observe(deleted, old, nil)
		f.observe(added, m, nil)
	default:
		f.observe(updated, m, old)
	}
	return slot, true
}

// remove removes the object at namespace/name, and returns it (nil if none).
func (f *followed) remove(namespace, name string) *monitored {
	f.mu.Lock()
	defer f.mu.Unlock()
	slot, found := f.find(namespace, name)
	if !found {
		return nil
	}
	old := f.read(slot)
	f.unindex(slot)
	ns := f.records[slot].ns
	f.release(slot)
	f.namespaces.release(ns)
	f.free = append(f.free, slot)
	return old
}

// get returns the object at namespace/name, or nil.
func (f *followed) get(namespace, name string) *monitored {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if slot, found := f.find(namespace, name); found {
		return f.read(slot)
	}
	return nil
}

func (f *followed) allocate() uint32 {
	if n := len(f.free); n > 0 {
		slot := f.free[n-1]
		f.free = f.free[:n-1]
		return slot
	}
	f.records = append(f.records, keptObject{})
	return uint32(len(f.records) - 1)
}

// write makes slot hold m: its ids appended to the arena (compacted first when most
// of it is garbage), its namespace interned, its relations kept if it has any.
func (f *followed) write(slot uint32, m *monitored) {
	if f.garbage > len(f.arena)/2 && f.garbage > 1<<20 {
		f.compact()
	}
	r := keptObject{off: uint32(len(f.arena)), ns: f.namespaces.use(m.namespace),
		nameLen: uint16(m.uidAt), uidLen: uint16(m.rvAt - m.uidAt), rvLen: uint16(len(m.ids) - int(m.rvAt))}
	f.arena = append(f.arena, m.ids...)
	f.records[slot] = r
	if m.rel != nil {
		f.rels[slot] = m.rel
	}
}

// release forgets what slot holds but its namespace's number, which the caller
// releases: its bytes become the arena's garbage, its record is cleared (a compaction
// skips it), its relations go.
func (f *followed) release(slot uint32) {
	f.garbage += f.records[slot].size()
	f.records[slot] = keptObject{}
	delete(f.rels, slot)
}

func (r keptObject) size() int { return int(r.nameLen) + int(r.uidLen) + int(r.rvLen) }

// compact copies the arena's live bytes into a new arena.
func (f *followed) compact() {
	arena := make([]byte, 0, len(f.arena)-f.garbage+f.garbage/4)
	for i, r := range f.records {
		if r.nameLen == 0 {
			continue
		}
		f.records[i].off = uint32(len(arena))
		arena = append(arena, f.arena[r.off:int(r.off)+r.size()]...)
	}
	f.arena, f.garbage = arena, 0
}

// read makes the monitored of slot.
func (f *followed) read(slot uint32) *monitored {
	r := f.records[slot]
	ids := string(f.arena[r.off : int(r.off)+r.size()])
	return &monitored{namespace: f.namespaces.names[r.ns], ids: ids,
		uidAt: int32(r.nameLen), rvAt: int32(int(r.nameLen) + int(r.uidLen)), rel: f.rels[slot]}
}

func (f *followed) name(slot uint32) []byte {
	r := f.records[slot]
	return f.arena[r.off : r.off+uint32(r.nameLen)]
}
