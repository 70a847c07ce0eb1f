package garbagecollector

import (
	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
)

// namespacesByUID holds the namespace of each observed object that has no node, by
// uid: an entry for almost every object the collector follows (a million at a
// million objects). The uids the server gives are UUIDs, held as their 16 bytes with
// the index of their namespace in a table of the namespaces in use, so that the map
// holds no pointer for Go's collector to trace; a uid that is not a UUID (written by
// another server into etcd, say) is held as it is.
type namespacesByUID struct {
	byUUID     map[uuid.UUID]uint32
	other      map[types.UID]string
	namespaces nameTable
}

func newNamespacesByUID() *namespacesByUID {
	return &namespacesByUID{byUUID: map[uuid.UUID]uint32{}, other: map[types.UID]string{}, namespaces: newNameTable()}
}

// nameTable numbers the names in use, each with how many entries name it; a freed
// number is given to the next new name.
type nameTable struct {
	names []string
	uses  []int
	index map[string]uint32
	free  []uint32
}

func newNameTable() nameTable { return nameTable{index: map[string]uint32{}} }

// parse returns uid as a UUID, if it is one in its canonical form (so that it is
// given back as it was).
func parse(uid types.UID) (uuid.UUID, bool) {
	id, err := uuid.Parse(string(uid))
	return id, err == nil && id.String() == string(uid)
}

func (p *namespacesByUID) get(uid types.UID) (string, bool) {
	if id, ok := parse(uid); ok {
		i, found := p.byUUID[id]
		if !found {
			return "", false
		}
		return p.namespaces.names[i], true
	}
	ns, found := p.other[uid]
	return ns, found
}

func (p *namespacesByUID) set(uid types.UID, ns string) {
	id, ok := parse(uid)
	if !ok {
		p.other[uid] = ns
		return
	}
	i := p.namespaces.use(ns)
	if old, found := p.byUUID[id]; found {
		p.namespaces.release(old)
	}
	p.byUUID[id] = i
}

func (p *namespacesByUID) delete(uid types.UID) {
	id, ok := parse(uid)
	if !ok {
		delete(p.other, uid)
		return
	}
	if i, found := p.byUUID[id]; found {
		delete(p.byUUID, id)
		p.namespaces.release(i)
	}
}

// use returns the number of ns, counting one more entry that names it.
func (p *nameTable) use(ns string) uint32 {
	i, found := p.index[ns]
	switch {
	case found:
	case len(p.free) > 0:
		i, p.free = p.free[len(p.free)-1], p.free[:len(p.free)-1]
		p.names[i] = ns
		p.index[ns] = i
	default:
		i = uint32(len(p.names))
		p.names, p.uses = append(p.names, ns), append(p.uses, 0)
		p.index[ns] = i
	}
	p.uses[i]++
	return i
}

// release counts one entry fewer that names number i's name, and frees the number
// once none does.
func (p *nameTable) release(i uint32) {
	p.uses[i]--
	if p.uses[i] > 0 {
		return
	}
	delete(p.index, p.names[i])
	p.names[i] = ""
	p.free = append(p.free, i)
}
