package openapi

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// manyKeys is a map of n keys "<prefix><i>" (not in order of i) to value(i).
func manyKeys(prefix string, n int, value func(int) any) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("%s%d", prefix, (i*7919)%n)] = value(i)
	}
	return m
}

// orderedObjects are two versions of an object with maps small and large, at the top,
// nested, and inside a list.
func orderedObjects() (before, after *unstructured.Unstructured) {
	obj := func(shift int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "many", "namespace": "default",
				"labels": manyKeys("l", 5, func(i int) any { return fmt.Sprint(i + shift) })},
			"data": manyKeys("k", 300+shift, func(i int) any { return fmt.Sprint(i % (3 + shift)) }),
			"nested": map[string]any{
				"wide":  manyKeys("w", 100, func(i int) any { return manyKeys("x", 40-shift, func(j int) any { return int64(i * j) }) }),
				"items": []any{manyKeys("a", 50, func(i int) any { return int64(i + shift) }), "plain", int64(3)},
			},
		}}
	}
	return obj(0), obj(2)
}

// Ordered computes the same field sets, comparisons and merges as the converter it
// wraps; only the order its values walk their maps in differs, which is the keys'.
func TestOrderedComputesTheSame(t *testing.T) {
	plain := managedfields.NewDeducedTypeConverter()
	sorted := Ordered(plain)
	before, after := orderedObjects()
	typedOf := func(tc managedfields.TypeConverter, u *unstructured.Unstructured) *typed.TypedValue {
		tv, err := tc.ObjectToTyped(u, typed.AllowDuplicates)
		if err != nil {
			t.Fatal(err)
		}
		return tv
	}
	pb, pa, sb, sa := typedOf(plain, before), typedOf(plain, after), typedOf(sorted, before), typedOf(sorted, after)

	for name, pair := range map[string][2]*typed.TypedValue{"before": {pb, sb}, "after": {pa, sa}} {
		want, err := pair[0].ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		got, err := pair[1].ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equals(want) {
			t.Errorf("%s: field sets differ:\nordered %s\nplain %s", name, got, want)
		}
	}
	want, err := pb.Compare(pa)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sb.Compare(sa)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Added.Equals(want.Added) || !got.Modified.Equals(want.Modified) || !got.Removed.Equals(want.Removed) {
		t.Errorf("comparisons differ:\nordered %s\nplain %s", got, want)
	}
	if got.Added.Empty() || got.Modified.Empty() || got.Removed.Empty() {
		t.Errorf("the objects should differ every way: %s", got)
	}
	wantMerged, err := pb.Merge(pa)
	if err != nil {
		t.Fatal(err)
	}
	gotMerged, err := sb.Merge(sa)
	if err != nil {
		t.Fatal(err)
	}
	if !value.Equals(gotMerged.AsValue(), wantMerged.AsValue()) {
		t.Error("merges differ")
	}
	obj, err := sorted.TypedToObject(sa)
	if err != nil {
		t.Fatal(err)
	}
	if u := obj.(*unstructured.Unstructured); !value.Equals(value.NewValueInterface(u.Object), value.NewValueInterface(after.Object)) {
		t.Error("TypedToObject does not give the object back")
	}
	checkKeyOrder(t, "", sa.AsValue())

	// A create compares the empty object, which has no large map and is left as it
	// is, with the new one, which is ordered.
	empty := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	pe, se := typedOf(plain, empty), typedOf(sorted, empty)
	if _, wrapped := se.AsValue().(orderedValue); wrapped {
		t.Fatal("the empty object was wrapped")
	}
	if want, err = pe.Compare(pa); err != nil {
		t.Fatal(err)
	}
	if got, err = se.Compare(sa); err != nil {
		t.Fatal(err)
	}
	if !got.Added.Equals(want.Added) || !got.Modified.Empty() || !got.Removed.Empty() {
		t.Errorf("a create's comparisons differ:\nordered %s\nplain %s", got, want)
	}
}

// checkKeyOrder fails t unless every map of more than unorderedUpTo keys under v walks
// its keys in order, by Iterate and by Zip.
func checkKeyOrder(t *testing.T, path string, v value.Value) {
	t.Helper()
	switch {
	case v.IsMap():
		m := v.AsMap()
		var keys, zipped []string
		m.Iterate(func(k string, child value.Value) bool {
			keys = append(keys, k)
			checkKeyOrder(t, path+"."+k, child)
			return true
		})
		value.MapZip(m, nil, value.Unordered, func(k string, _, _ value.Value) bool { zipped = append(zipped, k); return true })
		for i := 1; m.Length() > unorderedUpTo && i < len(keys); i++ {
			if keys[i-1] >= keys[i] || zipped[i-1] >= zipped[i] {
				t.Fatalf("%s: keys walked out of order: %q before %q", path, keys[i-1], keys[i])
			}
		}
	case v.IsList():
		l := v.AsList()
		for i := range l.Length() {
			checkKeyOrder(t, fmt.Sprintf("%s[%d]", path, i), l.At(i))
		}
	}
}

// BenchmarkManagedFieldsOfManyKeys compares what a create's managed fields cost (the
// comparison with the empty object) for a ConfigMap of 50,000 keys, with and without
// Ordered.
func BenchmarkManagedFieldsOfManyKeys(b *testing.B) {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "many"}, "data": manyKeys("k", 50000, func(int) any { return "v" })}}
	benchmarkComparison(b, &unstructured.Unstructured{Object: map[string]any{}}, obj)
}

// An object without a map of more than unorderedUpTo keys is left as the wrapped
// converter makes it; one with such a map at any depth, even in a list, is ordered.
func TestOrderedOnlyWhereAMapIsLarge(t *testing.T) {
	tc := Ordered(managedfields.NewDeducedTypeConverter())
	small := manyKeys("k", unorderedUpTo, func(int) any { return "v" })
	large := manyKeys("k", unorderedUpTo+1, func(int) any { return "v" })
	for _, c := range []struct {
		name string
		obj  map[string]any
		want bool
	}{
		{"small maps", map[string]any{"data": small, "spec": map[string]any{"x": small}}, false},
		{"a large map", map[string]any{"data": large}, true},
		{"a large map in a list", map[string]any{"spec": map[string]any{"items": []any{"a", small, large}}}, true},
	} {
		tv, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: c.obj})
		if err != nil {
			t.Fatal(err)
		}
		if _, got := tv.AsValue().(orderedValue); got != c.want {
			t.Errorf("%s: ordered %v, want %v", c.name, got, c.want)
		}
	}
}

// BenchmarkManagedFieldsOfAnUpdate is what Ordered costs an object without a large
// map: the comparison of two versions of a small ConfigMap, with and without it.
func BenchmarkManagedFieldsOfAnUpdate(b *testing.B) {
	obj := func(s int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "small", "labels": map[string]any{"app": "a", "rev": fmt.Sprint(s)}},
			"data":     manyKeys("k", 20, func(i int) any { return fmt.Sprint(i + s) })}}
	}
	benchmarkComparison(b, obj(0), obj(1))
}

// benchmarkComparison times what the field manager does with two objects, with and
// without Ordered: both made typed, then compared.
func benchmarkComparison(b *testing.B, before, after *unstructured.Unstructured) {
	for _, tc := range []struct {
		name string
		tc   managedfields.TypeConverter
	}{{"ordered", Ordered(managedfields.NewDeducedTypeConverter())}, {"plain", managedfields.NewDeducedTypeConverter()}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				x, err := tc.tc.ObjectToTyped(before)
				if err != nil {
					b.Fatal(err)
				}
				y, err := tc.tc.ObjectToTyped(after)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := x.Compare(y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
