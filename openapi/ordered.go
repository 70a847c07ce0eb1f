package openapi

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Ordered wraps tc so that the typed values it makes walk their maps in key order.
//
// structured-merge-diff builds field sets by inserting each path into a sorted slice,
// in the order it walks the object; Go maps walk in random order, so a map of n keys
// moves O(n²) elements: a ConfigMap of 100,000 keys took 10 s of CPU to create (its
// managed fields) and one of 200,000 over a minute, where the body limit allows
// either. Walked in key order every insertion is an append. What the sets, merges and
// comparisons compute is the same: only the order of the walk changes. Values
// structured-merge-diff makes itself (the result of a merge, as in server-side apply)
// are not wrapped, and neither are lists: a large associative list is still inserted
// in its own order.
func Ordered(tc managedfields.TypeConverter) managedfields.TypeConverter {
	return orderedConverter{tc}
}

type orderedConverter struct{ managedfields.TypeConverter }

func (c orderedConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tv, err := c.TypeConverter.ObjectToTyped(obj, opts...)
	if err != nil {
		return nil, err
	}
	// Most objects have no map large enough to matter: theirs are walked as they are,
	// without the wrappers' allocations.
	if u, ok := obj.(runtime.Unstructured); ok && !hasLargeMap(u.UnstructuredContent()) {
		return tv, nil
	}
	return typed.AsTyped(orderedValue{tv.AsValue()}, tv.Schema(), tv.TypeRef(), opts...)
}

// hasLargeMap reports whether v holds, at any depth, a map of more than unorderedUpTo
// keys.
func hasLargeMap(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		if len(v) > unorderedUpTo {
			return true
		}
		for _, child := range v {
			if hasLargeMap(child) {
				return true
			}
		}
	case []any:
		for _, child := range v {
			if hasLargeMap(child) {
				return true
			}
		}
	}
	return false
}

// unorderedUpTo is the size up to which a map is walked as it is: sorting its keys
// would cost more than the insertions it saves.
const unorderedUpTo = 32

// orderedValue is a value whose maps, at any depth, walk in key order.
type orderedValue struct{ value.Value }

func (v orderedValue) AsMap() value.Map { return orderedMap{v.Value.AsMap()} }

func (v orderedValue) AsMapUsing(a value.Allocator) value.Map {
	return orderedMap{v.Value.AsMapUsing(a)}
}

func (v orderedValue) AsList() value.List { return orderedList{v.Value.AsList()} }

func (v orderedValue) AsListUsing(a value.Allocator) value.List {
	return orderedList{v.Value.AsListUsing(a)}
}

// ordered wraps v (nil stays nil).
func ordered(v value.Value) value.Value {
	if v == nil {
		return nil
	}
	if o, ok := v.(orderedValue); ok {
		return o
	}
	return orderedValue{v}
}

type orderedMap struct{ value.Map }

func (m orderedMap) Get(key string) (value.Value, bool) {
	v, ok := m.Map.Get(key)
	return ordered(v), ok
}

func (m orderedMap) GetUsing(a value.Allocator, key string) (value.Value, bool) {
	v, ok := m.Map.GetUsing(a, key)
	return ordered(v), ok
}

func (m orderedMap) Iterate(fn func(string, value.Value) bool) bool {
	return m.IterateUsing(value.HeapAllocator, fn)
}

func (m orderedMap) IterateUsing(a value.Allocator, fn func(string, value.Value) bool) bool {
	if m.Length() <= unorderedUpTo {
		return m.Map.IterateUsing(a, func(k string, v value.Value) bool { return fn(k, ordered(v)) })
	}
	return zipKeys(a, m.Map, nil, func(k string, v, _ value.Value) bool { return fn(k, v) })
}

func (m orderedMap) Equals(other value.Map) bool { return value.MapEquals(m, other) }

func (m orderedMap) EqualsUsing(a value.Allocator, other value.Map) bool {
	return value.MapEqualsUsing(a, m, other)
}

func (m orderedMap) Zip(other value.Map, order value.MapTraverseOrder, fn func(string, value.Value, value.Value) bool) bool {
	return m.ZipUsing(value.HeapAllocator, other, order, fn)
}

// ZipUsing walks the keys of both maps in order, whatever order is asked for.
func (m orderedMap) ZipUsing(a value.Allocator, other value.Map, _ value.MapTraverseOrder, fn func(string, value.Value, value.Value) bool) bool {
	return zipKeys(a, m.Map, other, fn)
}

// zipKeys calls fn for each key of lhs or rhs (which may be nil) in key order, with
// its values in each, ordered.
func zipKeys(a value.Allocator, lhs, rhs value.Map, fn func(string, value.Value, value.Value) bool) bool {
	if o, ok := rhs.(orderedMap); ok {
		rhs = o.Map // its values are wrapped below
	}
	keys := make([]string, 0, lhs.Length())
	lhs.IterateUsing(a, func(k string, _ value.Value) bool { keys = append(keys, k); return true })
	if rhs != nil {
		rhs.IterateUsing(a, func(k string, _ value.Value) bool {
			if !lhs.Has(k) {
				keys = append(keys, k)
			}
			return true
		})
	}
	slices.Sort(keys)
	for _, k := range keys {
		l, _ := lhs.GetUsing(a, k)
		var r value.Value
		if rhs != nil {
			r, _ = rhs.GetUsing(a, k)
		}
		ok := fn(k, ordered(l), ordered(r))
		for _, v := range []value.Value{l, r} {
			if v != nil {
				a.Free(v)
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

type orderedList struct{ value.List }

func (l orderedList) At(i int) value.Value { return ordered(l.List.At(i)) }

func (l orderedList) AtUsing(a value.Allocator, i int) value.Value {
	return ordered(l.List.AtUsing(a, i))
}

func (l orderedList) Range() value.ListRange { return orderedRange{l.List.Range()} }

func (l orderedList) RangeUsing(a value.Allocator) value.ListRange {
	return orderedRange{l.List.RangeUsing(a)}
}

func (l orderedList) Equals(other value.List) bool { return value.ListEquals(l, other) }

func (l orderedList) EqualsUsing(a value.Allocator, other value.List) bool {
	return value.ListEqualsUsing(a, l, other)
}

type orderedRange struct{ value.ListRange }

func (r orderedRange) Item() (int, value.Value) {
	i, v := r.ListRange.Item()
	return i, ordered(v)
}
