package garbagecollector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// checkIndex fails t unless every object held is in the index once, where a lookup
// finds it: no empty entry between its home and its place.
func checkIndex(t *testing.T, f *followed) {
	t.Helper()
	mask := len(f.index) - 1
	seen := map[uint32]bool{}
	for at, e := range f.index {
		if e == 0 {
			continue
		}
		slot := e - 1
		if f.records[slot].nameLen == 0 || seen[slot] {
			t.Fatalf("index entry %d: slot %d is free or indexed twice", at, slot)
		}
		seen[slot] = true
		for i := f.home(slot); i != at; i = (i + 1) & mask {
			if f.index[i] == 0 {
				t.Fatalf("index entry %d (slot %d): an empty entry at %d lies between it and its home", at, slot, i)
			}
		}
	}
	held := 0
	for _, r := range f.records {
		if r.nameLen != 0 {
			held++
		}
	}
	if held != len(seen) || f.used != held {
		t.Fatalf("%d objects held, %d indexed, %d counted", held, len(seen), f.used)
	}
}

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
		if rv%97 == 0 {
			checkIndex(t, f)
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
		if m == nil || m.GetResourceVersion() != fmt.Sprint(rv) || m.GetUID() != types.UID("uid-"+ns+"-"+name) {
			t.Fatalf("%s: held %+v, want resourceVersion %d", key, m, rv)
		}
		live += len(m.ids)
		if got, want := len(m.GetFinalizers()) == 1, rv%7 == 0; got != want {
			t.Fatalf("%s at %d: finalizers %v", key, rv, m.GetFinalizers())
		}
	}
	checkIndex(t, f)
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
		checkIndex(t, f)
	}
	if n := len(f.namespaces.index); n != 1 {
		t.Fatalf("%d namespaces numbered, want the one still in use", n)
	}
}

// An object deleted and made again under its name while the reflector was listing
// again is observed as deleted and added, not as updated (the graph keys by uid).
func TestFollowedReplaceOfARecreatedObject(t *testing.T) {
	f, seen := newRecorded()
	_ = f.Add(object("ns", "o", 1))
	again := object("ns", "o", 2)
	again.SetUID("another")
	*seen = (*seen)[:0]
	_ = f.Replace([]interface{}{again}, "2")
	want := []observation{{typ: deleted, key: "ns/o"}, {typ: added, key: "ns/o"}}
	if !slices.Equal(*seen, want) {
		t.Fatalf("observed %+v, want %+v", *seen, want)
	}
}

// The reflector's watch-list keeps a starting state of what the store keeps (its
// transform), and the store takes that state as it takes listed objects.
func TestFollowedTakesAWatchListsState(t *testing.T) {
	f, seen := newRecorded()
	listed := false
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			listed = true
			return &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": "v1", "kind": "List"}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(10, false)
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				for i := range 3 {
					u := object("ns", fmt.Sprint("o", i), 5)
					u.SetAPIVersion("v1")
					u.SetKind("ConfigMap")
					w.Add(u)
				}
				end := &unstructured.Unstructured{}
				end.SetAPIVersion("v1")
				end.SetKind("ConfigMap")
				end.SetResourceVersion("5")
				end.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
				w.Action(watch.Bookmark, end)
			}
			return w, nil
		},
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, f, cache.ReflectorOptions{})
	done := make(chan struct{})
	go func() { defer close(done); r.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.After(30 * time.Second)
	for !f.synced.Load() {
		select {
		case <-deadline:
			t.Fatal("the watch-list's state was never stored")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if listed || len(f.list()) != 3 || len(*seen) != 3 {
		t.Fatalf("listed %v, holds %d, observed %d: want the watch-list's three objects", listed, len(f.list()), len(*seen))
	}
}

// In a table that never grows, removals shift back entries whose run wraps around
// its end.
func TestFollowedIndexWrapsAround(t *testing.T) {
	f, _ := newRecorded()
	rng := rand.New(rand.NewPCG(3, 4))
	for op := range 20000 {
		name := fmt.Sprint("w", rng.IntN(31))
		if rng.IntN(2) == 0 {
			_ = f.Delete(object("ns", name, op+1))
		} else {
			_ = f.Add(object("ns", name, op+1))
		}
		checkIndex(t, f)
	}
	if len(f.index) != 64 {
		t.Fatalf("the table grew to %d entries", len(f.index))
	}
}
