package garbagecollector

import (
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// absentCacheSize is how many owners verified absent the graph remembers (Kubernetes'
// garbage collector remembers as many).
const absentCacheSize = 500

// orphaningCacheSize is how many owners seen deleted with the orphan finalizer the
// graph remembers, so that a dependent it learns of late is orphaned, not deleted.
const orphaningCacheSize = 4096

// objectRef identifies an object as an owner reference names it, with the namespace
// it is looked up in ("" for cluster-scoped objects).
type objectRef struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
}

// String is the form Kubernetes' garbage collector gives references in its Events.
func (r objectRef) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// refOf is the reference owner names, looked up in namespace.
func refOf(owner metav1.OwnerReference, namespace string) objectRef {
	return objectRef{APIVersion: owner.APIVersion, Kind: owner.Kind, Namespace: namespace, Name: owner.Name, UID: owner.UID}
}

// names reports whether owner names r: same uid, name, kind and apiVersion.
func (r objectRef) names(owner metav1.OwnerReference) bool {
	return owner.UID == r.UID && owner.Name == r.Name && owner.Kind == r.Kind && owner.APIVersion == r.APIVersion
}

// node is an object of the graph: observed through a monitor, or virtual (named as
// an owner by an observed object, not seen itself yet).
type node struct {
	ref objectRef
	// owners are the object's ownerReferences (none for a virtual node).
	owners []metav1.OwnerReference
	// dependents are the objects whose owners name this one, by uid: nil until the
	// first (most objects own nothing, and a graph holds every object).
	dependents map[types.UID]struct{}
	virtual    bool
	// deleting: its deletionTimestamp is set. deletingDependents: and it carries the
	// foregroundDeletion finalizer, so it waits for its dependents.
	deleting, deletingDependents bool
}

// addDependent records that the object uid names n as an owner.
func (n *node) addDependent(uid types.UID) {
	if n.dependents == nil {
		n.dependents = map[types.UID]struct{}{}
	}
	n.dependents[uid] = struct{}{}
}

// nodeState is a copy of a node, for the collector's workers.
type nodeState struct {
	ref                                   objectRef
	owners                                []metav1.OwnerReference
	virtual, deleting, deletingDependents bool
	dependents                            int
}

func (n *node) state() nodeState {
	return nodeState{ref: n.ref, owners: slices.Clone(n.owners), virtual: n.virtual, deleting: n.deleting,
		deletingDependents: n.deletingDependents, dependents: len(n.dependents)}
}

// blocks reports whether the object of s holds the deletion of owner back: one of
// its owner references names owner with blockOwnerDeletion.
func (s nodeState) blocks(owner types.UID) bool {
	return slices.ContainsFunc(s.owners, func(o metav1.OwnerReference) bool {
		return o.UID == owner && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion
	})
}

// changeType is what a monitor saw happen to an object.
type changeType int

const (
	added changeType = iota
	updated
	deleted
)

// queues are where the graph sends the objects the collector must look at: attempt
// to delete (an object whose owners may be gone, an owner that waits for its
// dependents), attempt to orphan (an owner deleted with the orphan finalizer), and
// the Warning Kubernetes emits for an owner reference to another namespace.
type queues struct {
	delete           func(types.UID)
	orphan           func(types.UID)
	invalidNamespace func(dependent objectRef, owner metav1.OwnerReference)
}

// graph holds every object the monitors observe, with their owners and dependents,
// as Kubernetes' garbage collector's dependency graph does. The monitors' event
// handlers change it (observe) and the workers read copies of its nodes; the
// workers' verdicts that an object is absent change it too (verifiedAbsent). It is
// only a guide to what to look at: every deletion is decided on what the API answers.
type graph struct {
	q queues
	// lookup returns the object a monitor holds at ref's coordinates, and them as
	// observed (nil if none): objects nothing refers to have no node.
	lookup func(ref objectRef) (objectRef, metav1.Object)
	// plain holds the namespace of each observed object that has no node, by uid.
	plain *namespacesByUID

	mu    sync.Mutex
	nodes map[types.UID]*node
	// absent are owners the API said do not exist (none by that name, or one with
	// another uid): a uid never comes back.
	absent *lru.Cache
	// orphaning are the owners whose orphan finalizer the collector removed (their
	// dependents orphaned), by uid, with the revision of that change (0 while it is
	// being made). A monitor may report a dependent after its owner's orphaning is
	// done (monitors of different resources are not ordered with one another); if
	// its reference to the owner existed then, it is removed once the owner is gone,
	// not taken for a reference to an absent owner.
	orphaning *lru.Cache
}

func newGraph(q queues) *graph {
	return &graph{q: q, nodes: map[types.UID]*node{}, plain: newNamespacesByUID(), absent: lru.New(absentCacheSize), orphaning: lru.New(orphaningCacheSize)}
}

// orphanedAt returns the revision at which the collector finished orphaning the
// dependents of uid (0: it is doing it now), and whether it did.
func (g *graph) orphanedAt(uid types.UID) (int64, bool) {
	rev, ok := g.orphaning.Get(uid)
	if !ok {
		return 0, false
	}
	return rev.(int64), true
}

// markOrphaned remembers that the collector orphaned the dependents of uid at rev (0:
// is orphaning them now).
func (g *graph) markOrphaned(uid types.UID, rev int64) { g.orphaning.Add(uid, rev) }

// forgetOrphaned forgets that the collector orphaned the dependents of uid.
func (g *graph) forgetOrphaned(uid types.UID) { g.orphaning.Remove(uid) }

// state returns a copy of the node of uid.
func (g *graph) state(uid types.UID) (nodeState, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[uid]
	if !ok {
		return nodeState{}, false
	}
	return n.state(), true
}

// dependents returns copies of the dependents of uid.
func (g *graph) dependents(uid types.UID) []nodeState {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[uid]
	if !ok {
		return nil
	}
	out := make([]nodeState, 0, len(n.dependents))
	for d := range n.dependents {
		if dep, ok := g.nodes[d]; ok {
			out = append(out, dep.state())
		}
	}
	return out
}

// isAbsent reports whether r was verified absent.
func (g *graph) isAbsent(r objectRef) bool {
	_, ok := g.absent.Get(r)
	return ok
}

// markAbsent remembers that r does not exist.
func (g *graph) markAbsent(r objectRef) { g.absent.Add(r, nil) }

// observe applies what a monitor saw: obj (old its previous state, if an update) of
// apiVersion and kind was added, updated or deleted.
func (g *graph) observe(typ changeType, apiVersion, kind string, obj, old metav1.Object) {
	ref := objectRef{APIVersion: apiVersion, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, found := g.nodes[ref.UID]
	if found && n.virtual {
		g.observeVirtual(n, ref)
	}
	switch {
	case typ != deleted && !found && !related(obj):
		// Nothing refers to it and it refers to nothing: no node, only its namespace
		// by uid (a dependent that names it later finds it in its monitor, in
		// whichever namespace it is: see ownerNode).
		g.plain.set(ref.UID, ref.Namespace)
	case typ != deleted && !found:
		g.plain.delete(ref.UID)
		n = &node{ref: ref, owners: obj.GetOwnerReferences(),
			deleting: obj.GetDeletionTimestamp() != nil, deletingDependents: waitsForDependents(obj)}
		g.nodes[ref.UID] = n
		g.addToOwners(n, n.owners)
		g.transitions(n, obj, old)
	case typ != deleted:
		g.updateOwners(n, obj.GetOwnerReferences())
		if obj.GetDeletionTimestamp() != nil {
			n.deleting = true
		}
		g.transitions(n, obj, old)
	case found:
		g.remove(n, ref)
	default:
		g.plain.delete(ref.UID)
	}
}

// observeVirtual makes virtual node n the object observed as ref: its dependents that
// named it otherwise (another namespace, kind, name or version) are looked at again,
// and a Warning reports those of another namespace.
func (g *graph) observeVirtual(n *node, ref objectRef) {
	if ref != n.ref {
		_, other := g.partition(n, ref)
		for _, dep := range other {
			if ref.Namespace != "" && dep.ref.Namespace != ref.Namespace {
				g.reportInvalidNamespace(dep, ref.UID)
			}
			g.q.delete(dep.ref.UID)
		}
		n.ref = ref
	}
	n.virtual = false
}

// updateOwners records a change of n's owner references.
func (g *graph) updateOwners(n *node, owners []metav1.OwnerReference) {
	added, removed, changed := diffOwners(n.owners, owners)
	if len(added)+len(removed)+len(changed) == 0 {
		return
	}
	// An owner waiting for its blocking dependents may now wait for one fewer.
	for _, r := range removed {
		if blocking(r) {
			g.queueIfPresent(r.UID)
		}
	}
	for _, c := range changed {
		if blocking(c[0]) && !blocking(c[1]) {
			g.queueIfPresent(c[1].UID)
		}
	}
	n.owners = owners
	g.addToOwners(n, added)
	for _, r := range removed {
		if o, ok := g.nodes[r.UID]; ok {
			delete(o.dependents, n.ref.UID)
		}
	}
}

func (g *graph) queueIfPresent(uid types.UID) {
	if _, ok := g.nodes[uid]; ok {
		g.q.delete(uid)
	}
}

// addToOwners makes n a dependent of owners. An owner not in the graph gets a virtual
// node, which the collector checks against the API. n is looked at if one of its
// references may not resolve: an owner observed in another namespace (reported),
// under other coordinates, or a virtual cluster-scoped one first named from another
// namespace.
func (g *graph) addToOwners(n *node, owners []metav1.OwnerReference) {
	suspect := false
	for _, o := range owners {
		on, ok := g.nodes[o.UID]
		if !ok {
			on = g.ownerNode(o, n.ref.Namespace)
			g.nodes[o.UID] = on
			if on.virtual {
				on.addDependent(n.ref.UID)
				g.q.delete(o.UID)
				continue
			}
		}
		on.addDependent(n.ref.UID)
		if suspect {
			continue
		}
		namespaced := on.ref.Namespace != ""
		switch {
		case namespaced && on.ref.Namespace != n.ref.Namespace:
			if !on.virtual {
				g.reportInvalidNamespace(n.state(), o.UID)
			}
			suspect = true
		case !on.ref.names(o):
			suspect = true
		case !namespaced && on.ref.Namespace != n.ref.Namespace && on.virtual:
			suspect = true
		}
	}
	if suspect {
		g.q.delete(n.ref.UID)
	}
}

// related reports whether the graph must hold obj though no dependent names it: it
// has owners, or its deletion is under way or may wait for the collector.
func related(obj metav1.Object) bool {
	return len(obj.GetOwnerReferences()) > 0 || obj.GetDeletionTimestamp() != nil || waitsForDependents(obj) ||
		slices.Contains(obj.GetFinalizers(), metav1.FinalizerOrphanDependents)
}

// ownerNode is the node of owner o, first named by a dependent in namespace ns: the
// object its monitor holds under those coordinates with that uid (observed before,
// without a node of its own), else a virtual node the collector checks against the API.
func (g *graph) ownerNode(o metav1.OwnerReference, ns string) *node {
	ref := refOf(o, ns)
	if at, ok := g.plain.get(o.UID); ok && g.lookup != nil {
		where := ref
		where.Namespace = at
		if seen, obj := g.lookup(where); obj != nil && obj.GetUID() == o.UID {
			g.plain.delete(o.UID)
			return &node{ref: seen, owners: obj.GetOwnerReferences(), deleting: obj.GetDeletionTimestamp() != nil,
				deletingDependents: waitsForDependents(obj)}
		}
	}
	return &node{ref: ref, virtual: true}
}

// transitions queues n when its deletion starts to wait for the collector: to orphan
// its dependents, or to delete them first (then they are all looked at).
func (g *graph) transitions(n *node, obj, old metav1.Object) {
	if startsWaiting(obj, old, metav1.FinalizerOrphanDependents) {
		g.q.orphan(n.ref.UID)
		return
	}
	if startsWaiting(obj, old, metav1.FinalizerDeleteDependents) {
		n.deletingDependents = true
		for d := range n.dependents {
			g.q.delete(d)
		}
		g.q.delete(n.ref.UID)
	}
}

// remove takes the node of an object that is gone (deletedRef, as it was observed or
// verified absent) out of the graph: its dependents are looked at (their owner is
// absent), and so are its owners that wait for their dependents.
func (g *graph) remove(n *node, deletedRef objectRef) {
	delete(g.nodes, n.ref.UID)
	for _, o := range n.owners {
		if on, ok := g.nodes[o.UID]; ok {
			delete(on.dependents, n.ref.UID)
		}
	}
	if len(n.dependents) > 0 {
		g.markAbsent(deletedRef)
	}
	for d := range n.dependents {
		g.q.delete(d)
	}
	for _, o := range n.owners {
		if on, ok := g.nodes[o.UID]; ok && on.deletingDependents {
			g.q.delete(o.UID)
		}
	}
}

// verifiedAbsent applies the collector's finding that ref does not exist (the API has
// no such object, or one with another uid). A virtual node whose dependents name it
// under other coordinates too stays, under one of those; an
// observed node stays if it was observed under other coordinates. The dependents that
// named ref are looked at again either way.
func (g *graph) verifiedAbsent(ref objectRef) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[ref.UID]
	if !ok {
		return
	}
	if !n.virtual && n.ref == ref {
		g.remove(n, ref)
		return
	}
	matching, other := g.partition(n, ref)
	if !n.virtual || len(other) > 0 {
		if len(matching) > 0 {
			g.markAbsent(ref)
			for _, dep := range matching {
				g.q.delete(dep.ref.UID)
			}
		}
		if n.virtual && n.ref == ref {
			// Checked next as the collector's worker retries a virtual node.
			if alt := alternateRef(other, ref); alt != nil {
				n.ref = *alt
			}
		}
		return
	}
	g.remove(n, ref)
}

// partition divides the dependents of n into those whose references name ref and
// those with a reference to ref's uid that names it otherwise (a dependent may be in
// both). A dependent in another namespace than a namespaced ref names it otherwise.
func (g *graph) partition(n *node, ref objectRef) (matching, other []nodeState) {
	for d := range n.dependents {
		dep, ok := g.nodes[d]
		if !ok {
			continue
		}
		match, mismatch := false, false
		if ref.Namespace != "" && ref.Namespace != dep.ref.Namespace {
			mismatch = true
		} else {
			for _, o := range dep.owners {
				if o.UID != ref.UID {
					continue
				}
				if ref.names(o) {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep.state())
		}
		if mismatch {
			other = append(other, dep.state())
		}
	}
	return matching, other
}

// alternateRef returns another identity deps give absent's uid, to be checked next:
// the first after absent in a fixed order, else the first; nil if there is none.
func alternateRef(deps []nodeState, absent objectRef) *objectRef {
	clusterScoped := absent.Namespace == ""
	var candidates []objectRef
	for _, dep := range deps {
		for _, o := range dep.owners {
			if o.UID != absent.UID {
				continue
			}
			if absent.names(o) && (clusterScoped || absent.Namespace == dep.ref.Namespace) {
				continue
			}
			r := refOf(o, dep.ref.Namespace)
			if clusterScoped && r.APIVersion == absent.APIVersion && r.Kind == absent.Kind {
				r.Namespace = "" // that kind is known to be cluster-scoped
			}
			if r != absent && !slices.Contains(candidates, r) {
				candidates = append(candidates, r)
			}
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	slices.SortFunc(candidates, compareRefs)
	for i := range candidates {
		if compareRefs(absent, candidates[i]) < 0 {
			return &candidates[i]
		}
	}
	return &candidates[0]
}

// compareRefs orders references by kind, apiVersion, namespace, name and uid.
func compareRefs(a, b objectRef) int {
	for _, p := range [][2]string{{a.Kind, b.Kind}, {a.APIVersion, b.APIVersion}, {a.Namespace, b.Namespace}, {a.Name, b.Name}, {string(a.UID), string(b.UID)}} {
		if p[0] != p[1] {
			if p[0] < p[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// reportInvalidNamespace emits the Warning of dep's reference to owner, which lives
// in another namespace.
func (g *graph) reportInvalidNamespace(dep nodeState, owner types.UID) {
	i := slices.IndexFunc(dep.owners, func(o metav1.OwnerReference) bool { return o.UID == owner })
	if i >= 0 {
		g.q.invalidNamespace(dep.ref, dep.owners[i])
	}
}

// diffOwners compares two lists of owner references by uid: those added, removed,
// and changed (old and new).
func diffOwners(old, cur []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed [][2]metav1.OwnerReference) {
	for _, c := range cur {
		i := slices.IndexFunc(old, func(o metav1.OwnerReference) bool { return o.UID == c.UID })
		switch {
		case i < 0:
			added = append(added, c)
		case !equalRef(old[i], c):
			changed = append(changed, [2]metav1.OwnerReference{old[i], c})
		}
	}
	for _, o := range old {
		if !slices.ContainsFunc(cur, func(c metav1.OwnerReference) bool { return c.UID == o.UID }) {
			removed = append(removed, o)
		}
	}
	return added, removed, changed
}

func equalRef(a, b metav1.OwnerReference) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		boolValue(a.Controller) == boolValue(b.Controller) && boolValue(a.BlockOwnerDeletion) == boolValue(b.BlockOwnerDeletion)
}

func boolValue(b *bool) bool { return b != nil && *b }

// blocking reports whether a reference holds its owner's foreground deletion back.
func blocking(r metav1.OwnerReference) bool { return boolValue(r.BlockOwnerDeletion) }

// waitsForDependents reports whether obj is being deleted in the foreground.
func waitsForDependents(obj metav1.Object) bool {
	return obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents)
}

// startsWaiting reports whether obj is being deleted with finalizer and old (nil if
// unknown) was not.
func startsWaiting(obj, old metav1.Object, finalizer string) bool {
	waits := func(o metav1.Object) bool {
		return o.GetDeletionTimestamp() != nil && slices.Contains(o.GetFinalizers(), finalizer)
	}
	if !waits(obj) {
		return false
	}
	return old == nil || !waits(old)
}
