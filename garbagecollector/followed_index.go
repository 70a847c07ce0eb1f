package garbagecollector

import "hash/maphash"

// The index of a followed store: open addressing with linear probing over a table of
// slot+1 (0: empty), a power of two at most half full; a removal shifts the entries
// after it back, so there are no tombstones. The table holds no pointer, and needs
// no string key: an entry's key is its record's namespace and name.

// find returns the slot of namespace/name. A namespace not in use has no object.
func (f *followed) find(namespace, name string) (uint32, bool) {
	ns, ok := f.namespaces.index[namespace]
	if !ok {
		return 0, false
	}
	mask := len(f.index) - 1
	for i := f.hash(ns, name) & mask; ; i = (i + 1) & mask {
		e := f.index[i]
		if e == 0 {
			return 0, false
		}
		if slot := e - 1; f.records[slot].ns == ns && string(f.name(slot)) == name {
			return slot, true
		}
	}
}

func (f *followed) hash(ns uint32, name string) int {
	return int(maphash.String(f.seed, name) ^ uint64(ns)*0x9e3779b97f4a7c15)
}

func (f *followed) home(slot uint32) int {
	return f.hash(f.records[slot].ns, string(f.name(slot))) & (len(f.index) - 1)
}

// insert adds slot, whose record is written, to the index.
func (f *followed) insert(slot uint32) {
	if 2*(f.used+1) > len(f.index) {
		f.grow()
	}
	mask := len(f.index) - 1
	i := f.home(slot)
	for f.index[i] != 0 {
		i = (i + 1) & mask
	}
	f.index[i] = slot + 1
	f.used++
}

func (f *followed) grow() {
	old := f.index
	f.index, f.used = make([]uint32, 2*len(old)), 0
	for _, e := range old {
		if e != 0 {
			f.insert(e - 1)
		}
	}
}

// unindex removes slot, whose record is still written, from the index, and moves
// back the entries of the run after it that may no longer be found past the gap.
func (f *followed) unindex(slot uint32) {
	mask := len(f.index) - 1
	i := f.home(slot)
	for f.index[i] != slot+1 {
		i = (i + 1) & mask
	}
	f.index[i] = 0
	f.used--
	for j := (i + 1) & mask; f.index[j] != 0; j = (j + 1) & mask {
		h := f.home(f.index[j] - 1)
		// The entry at j may move to the gap at i unless its home lies in (i, j].
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			f.index[i], f.index[j] = f.index[j], 0
			i = j
		}
	}
}
