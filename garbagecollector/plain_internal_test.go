package garbagecollector

import (
	"testing"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
)

// The table gives back each uid's namespace, UUID or not, and keeps a namespace's
// slot only while an entry names it.
func TestNamespacesByUID(t *testing.T) {
	p := newNamespacesByUID()
	a, b := types.UID(uuid.NewString()), types.UID(uuid.NewString())
	upper := types.UID("6F9619FF-8B86-D011-B42D-00CF4FC964FF") // a UUID, not as the server writes them
	p.set(a, "one")
	p.set(b, "one")
	p.set("not-a-uuid", "two")
	p.set(upper, "three")
	for uid, want := range map[types.UID]string{a: "one", b: "one", "not-a-uuid": "two", upper: "three"} {
		if got, ok := p.get(uid); !ok || got != want {
			t.Errorf("get(%s) = %q, %v; want %q", uid, got, ok, want)
		}
	}
	if len(p.namespaces.names) != 1 || p.namespaces.uses[0] != 2 {
		t.Fatalf("namespaces in use %q, uses %v; want one, named twice", p.namespaces.names, p.namespaces.uses)
	}
	p.set(b, "") // moved: a cluster-scoped object's
	p.delete(a)
	if _, ok := p.get(a); ok {
		t.Error("a deleted uid is still held")
	}
	if _, found := p.namespaces.index["one"]; found {
		t.Errorf("the namespace no entry names keeps its slot: %v", p.namespaces.index)
	}
	p.set(a, "four")
	if got, _ := p.get(a); got != "four" || len(p.namespaces.names) != 2 {
		t.Errorf("get = %q with %d slots; want four, a freed slot reused", got, len(p.namespaces.names))
	}
	p.delete("not-a-uuid")
	if _, ok := p.get("not-a-uuid"); ok {
		t.Error("a deleted uid that is no UUID is still held")
	}
}
