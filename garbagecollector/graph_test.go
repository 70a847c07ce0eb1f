package garbagecollector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// recorded is what the graph sent to its queues.
type recorded struct {
	deletes, orphans []types.UID
	invalid          []string // dependent uid -> owner uid
}

func newTestGraph() (*graph, *recorded) {
	r := &recorded{}
	g := newGraph(queues{
		delete: func(u types.UID) { r.deletes = append(r.deletes, u) },
		orphan: func(u types.UID) { r.orphans = append(r.orphans, u) },
		invalidNamespace: func(dep objectRef, owner metav1.OwnerReference) {
			r.invalid = append(r.invalid, string(dep.UID)+"->"+string(owner.UID))
		},
	})
	return g, r
}

func (r *recorded) reset() { *r = recorded{} }

func obj(ns, name, uid string, owners ...metav1.OwnerReference) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), OwnerReferences: owners}
}

func cmRef(name, uid string, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID(uid), BlockOwnerDeletion: ptr.To(block)}
}

func TestGraphVirtualOwners(t *testing.T) {
	g, r := newTestGraph()
	// A dependent whose owner is not observed: a virtual node, looked at.
	g.observe(added, "v1", "ConfigMap", obj("a", "dep", "d1", cmRef("owner", "o1", true)), nil)
	if s, ok := g.state("o1"); !ok || !s.virtual || s.ref.Namespace != "a" || s.dependents != 1 {
		t.Fatalf("virtual owner: %+v %v", s, ok)
	}
	if !slices.Equal(r.deletes, []types.UID{"o1"}) {
		t.Fatalf("queued %v, want the virtual owner", r.deletes)
	}
	// The owner observed in another namespace: the dependent's reference cannot
	// resolve; it is looked at and a Warning is reported.
	r.reset()
	g.observe(added, "v1", "ConfigMap", obj("b", "owner", "o1"), nil)
	if s, _ := g.state("o1"); s.virtual || s.ref.Namespace != "b" {
		t.Fatalf("observed owner: %+v", s)
	}
	if !slices.Equal(r.deletes, []types.UID{"d1"}) || !slices.Equal(r.invalid, []string{"d1->o1"}) {
		t.Fatalf("queued %v, reported %v", r.deletes, r.invalid)
	}
	// A second dependent in the other namespace: reported at once.
	r.reset()
	g.observe(added, "v1", "ConfigMap", obj("a", "dep2", "d2", cmRef("owner", "o1", false)), nil)
	if !slices.Equal(r.deletes, []types.UID{"d2"}) || !slices.Equal(r.invalid, []string{"d2->o1"}) {
		t.Fatalf("queued %v, reported %v", r.deletes, r.invalid)
	}
}

func TestGraphVerifiedAbsent(t *testing.T) {
	g, r := newTestGraph()
	// Two dependents name the same uid with different names: the virtual node takes
	// the first identity; verified absent, it takes the other, and the dependent
	// that named the first is looked at with the first remembered absent.
	g.observe(added, "v1", "ConfigMap", obj("a", "d1", "d1", cmRef("x", "o1", false)), nil)
	g.observe(added, "v1", "ConfigMap", obj("a", "d2", "d2", cmRef("y", "o1", false)), nil)
	first, _ := g.state("o1")
	r.reset()
	g.verifiedAbsent(first.ref)
	s, ok := g.state("o1")
	if !ok || !s.virtual || s.ref.Name != "y" {
		t.Fatalf("after the first identity was found absent: %+v %v", s, ok)
	}
	if !g.isAbsent(first.ref) || !slices.Equal(r.deletes, []types.UID{"d1"}) {
		t.Fatalf("absent %v, queued %v", g.isAbsent(first.ref), r.deletes)
	}
	// The second verified absent too: the node stays while a dependent names it
	// otherwise (as in Kubernetes), the dependent naming the second looked at.
	r.reset()
	g.verifiedAbsent(s.ref)
	if s, ok := g.state("o1"); !ok || s.ref.Name != "x" || !slices.Equal(r.deletes, []types.UID{"d2"}) || !g.isAbsent(s.ref) {
		t.Fatalf("after the second identity was found absent: %+v %v, queued %v", s, ok, r.deletes)
	}
	// Once its dependents are gone (collected), the next verdict removes it.
	g.observe(deleted, "v1", "ConfigMap", obj("a", "d1", "d1", cmRef("x", "o1", false)), nil)
	g.observe(deleted, "v1", "ConfigMap", obj("a", "d2", "d2", cmRef("y", "o1", false)), nil)
	g.verifiedAbsent(first.ref)
	if _, ok := g.state("o1"); ok {
		t.Fatal("the virtual node stayed without dependents")
	}
	// An observed node is not removed by a verdict on other coordinates.
	g.observe(added, "v1", "ConfigMap", obj("a", "real", "o2", cmRef("x", "o3", false)), nil)
	g.verifiedAbsent(objectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "other", UID: "o2"})
	if _, ok := g.state("o2"); !ok {
		t.Fatal("an observed node was removed by a verdict on another name")
	}
}

func TestGraphTransitions(t *testing.T) {
	g, r := newTestGraph()
	now := metav1.Now()
	owner := obj("a", "owner", "o1")
	g.observe(added, "v1", "ConfigMap", owner, nil)
	g.observe(added, "v1", "ConfigMap", obj("a", "dep", "d1", cmRef("owner", "o1", true)), nil)
	r.reset()
	// Deleted in the foreground: the owner and its dependents are looked at, once.
	fg := owner.DeepCopy()
	fg.DeletionTimestamp, fg.Finalizers = &now, []string{metav1.FinalizerDeleteDependents}
	g.observe(updated, "v1", "ConfigMap", fg, owner)
	g.observe(updated, "v1", "ConfigMap", fg, fg)
	if s, _ := g.state("o1"); !s.deletingDependents || !slices.Equal(r.deletes, []types.UID{"d1", "o1"}) {
		t.Fatalf("foreground: %+v, queued %v", s, r.deletes)
	}
	// The blocking reference goes: the waiting owner is looked at.
	r.reset()
	g.observe(updated, "v1", "ConfigMap", obj("a", "dep", "d1", cmRef("owner", "o1", false)), nil)
	if !slices.Equal(r.deletes, []types.UID{"o1"}) {
		t.Fatalf("unblocked: queued %v", r.deletes)
	}
	// Switched to orphan: the owner is orphaned.
	r.reset()
	or := fg.DeepCopy()
	or.Finalizers = []string{metav1.FinalizerOrphanDependents}
	g.observe(updated, "v1", "ConfigMap", or, fg)
	if !slices.Equal(r.orphans, []types.UID{"o1"}) || len(r.deletes) != 0 {
		t.Fatalf("orphan: orphans %v, deletes %v", r.orphans, r.deletes)
	}
	// The owner deleted: the dependent is looked at, the owner remembered absent.
	r.reset()
	g.observe(deleted, "v1", "ConfigMap", or, nil)
	if !slices.Equal(r.deletes, []types.UID{"d1"}) || !g.isAbsent(objectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "owner", UID: "o1"}) {
		t.Fatalf("deleted: queued %v", r.deletes)
	}
}

// An object nothing refers to has no node; a dependent that names it later finds it
// where its monitor holds it (in its own namespace or another, then reported), not a
// virtual node to check against the API.
func TestGraphPlainObjectsHaveNoNode(t *testing.T) {
	g, r := newTestGraph()
	held := map[string]metav1.Object{}
	g.lookup = func(ref objectRef) (objectRef, metav1.Object) {
		o, ok := held[ref.Namespace+"/"+ref.Name]
		if !ok {
			return ref, nil
		}
		ref.Namespace, ref.UID = o.GetNamespace(), o.GetUID()
		return ref, o
	}
	observe := func(o *metav1.ObjectMeta) {
		held[o.Namespace+"/"+o.Name] = o
		g.observe(added, "v1", "ConfigMap", o, nil)
	}
	observe(obj("a", "owner", "o1"))
	observe(obj("b", "elsewhere", "o2"))
	if _, ok := g.state("o1"); ok {
		t.Fatal("an object nothing refers to has a node")
	}
	r.reset()
	observe(obj("a", "dep", "d1", cmRef("owner", "o1", true)))
	if s, ok := g.state("o1"); !ok || s.virtual || s.dependents != 1 || len(r.deletes) != 0 {
		t.Fatalf("owner named after it was observed: %+v %v, queued %v", s, ok, r.deletes)
	}
	r.reset()
	observe(obj("a", "dep2", "d2", cmRef("elsewhere", "o2", false)))
	if s, ok := g.state("o2"); !ok || s.virtual || s.ref.Namespace != "b" || !slices.Equal(r.invalid, []string{"d2->o2"}) {
		t.Fatalf("owner in another namespace: %+v %v, reported %v", s, ok, r.invalid)
	}
	// Deleted without a node: forgotten.
	g.observe(deleted, "v1", "ConfigMap", obj("a", "gone", "o3"), nil)
	observe(obj("a", "gone", "o3"))
	g.observe(deleted, "v1", "ConfigMap", obj("a", "gone", "o3"), nil)
	if _, ok := g.plain.get("o3"); ok {
		t.Fatal("a deleted object is still remembered")
	}
}
