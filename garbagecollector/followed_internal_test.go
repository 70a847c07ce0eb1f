package garbagecollector

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

type observation struct {
	typ      changeType
	key, old string // old: the resourceVersion before an update
}

func newRecorded() (*followed, *[]observation) {
	var seen []observation
	f := newFollowed(func(typ changeType, obj, old metav1.Object) {
		o := observation{typ: typ, key: obj.GetNamespace() + "/" + obj.GetName()}
		if old != nil {
			o.old = old.GetResourceVersion()
		}
		seen = append(seen, o)
	})
	return f, &seen
}

func object(ns, name string, rv int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + ns + "-" + name))
	u.SetResourceVersion(fmt.Sprint(rv))
	if rv%7 == 0 {
		u.SetFinalizers([]string{"example.com/hold"})
	}
	return u
}

// A followed store holds what a map would, through thousands of additions, updates
// and removals (its index shifting entries back, its arena compacted), and reports
// each change with the object before it.
func TestFollowedHoldsWhatItWasGiven(t *testing.T) {
	f, seen := newRecorded()
	model := map[string]int{} // namespace/name: resourceVersion
	rng := rand.New(rand.NewPCG(1, 2))
	pad := strings.Repeat("p", 60) // enough bytes written for the arena to be compacted
	for rv := 1; rv <= 20000; rv++ {
		ns, name := fmt.Sprint("ns-", rng.IntN(3)), fmt.Sprintf("object-%03d-%s", rng.IntN(700), pad)
		key := ns + "/" + name
		before, had := model[key]
		*seen = (*seen)[:0]
		want := observation{typ: added, key: key}
		if rng.IntN(3) == 0 {
			if err := f.Delete(object(ns, name, rv)); err != nil {
				t.Fatal(err)
			}
			delete(model, key)
			want = observation{typ: deleted, key: key}
		} else {
			if err := f.Update(object(ns, name, rv)); err != nil {
				t.Fatal(err)
			}
			model[key] = rv
			if had {
				want = observation{typ: updated, key: key, old: fmt.Sprint(before)}
			}
		}
		if had || want.typ != deleted {
			if len(*seen) != 1 || (*seen)[0] != want {
				t.Fatalf("change %d: observed %+v, want %+v", rv, *seen, want)
			}
		} else if len(*seen) != 0 {
			t.Fatalf("change %d: removing what is not held observed %+v", rv, *seen)
		}
	}
	live := 0
	for key, rv := range model {
		ns, name, _ := strings.Cut(key, "/")
		m := f.get(ns, name)
		live += len(m.ids)
		if m == nil || m.GetResourceVersion() != fmt.Sprint(rv) || m.GetUID() != types.UID("uid-"+ns+"-"+name) {
			t.Fatalf("%s: held %+v, want resourceVersion %d", key, m, rv)
		}
		if got, want := len(m.GetFinalizers()) == 1, rv%7 == 0; got != want {
			t.Fatalf("%s at %d: finalizers %v", key, rv, m.GetFinalizers())
		}
	}
	if n := len(f.list()); n != len(model) {
		t.Fatalf("holds %d objects, want %d", n, len(model))
	}
	if len(f.arena) > 2*live+1<<20 {
		t.Fatalf("an arena of %d bytes for %d bytes held: never compacted", len(f.arena), live)
	}
	if f.get("ns-9", "object-1") != nil || f.get("ns-0", "absent") != nil {
		t.Fatal("holds what it was never given")
	}
}

// Replace stores a list and removes, as deleted, what the list no longer has.
func TestFollowedReplace(t *testing.T) {
	f, seen := newRecorded()
	for i := range 200 {
		_ = f.Add(object("ns", fmt.Sprint("o", i), 1))
	}
	var list []interface{}
	for i := 100; i < 300; i++ {
		list = append(list, object("ns", fmt.Sprint("o", i), 2))
	}
	*seen = (*seen)[:0]
	if err := f.Replace(list, "2"); err != nil {
		t.Fatal(err)
	}
	counts := map[changeType]int{}
	for _, o := range *seen {
		counts[o.typ]++
	}
	if counts[added] != 100 || counts[updated] != 100 || counts[deleted] != 100 || !f.synced.Load() {
		t.Fatalf("observed %v (synced %v), want 100 additions, updates and deletions", counts, f.synced.Load())
	}
	var names []string
	for _, m := range f.list() {
		names = append(names, m.GetName())
	}
	slices.Sort(names)
	if len(names) != 200 || names[0] != "o100" || f.get("ns", "o99") != nil || f.get("ns", "o299").GetResourceVersion() != "2" {
		t.Fatalf("holds %d objects after the list (first %q)", len(names), names[0])
	}
}

// The only object of a namespace stays found through its updates, while other
// namespaces come and go around it (their numbers freed and given again).
func TestFollowedKeepsANamespacesOnlyObject(t *testing.T) {
	f, _ := newRecorded()
	for rv := 1; rv <= 50; rv++ {
		_ = f.Update(object("solo", "only", rv))
		_ = f.Add(object(fmt.Sprint("passing-", rv), "x", rv))
		_ = f.Delete(object(fmt.Sprint("passing-", rv), "x", rv))
		if m := f.get("solo", "only"); m == nil || m.GetResourceVersion() != fmt.Sprint(rv) {
			t.Fatalf("after update %d: holds %+v", rv, m)
		}
	}
	if n := len(f.namespaces.index); n != 1 {
		t.Fatalf("%d namespaces numbered, want the one still in use", n)
	}
}
