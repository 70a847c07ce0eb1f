package registry

import (
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// newFieldErrors returns a Forbidden error for every occurrence of a field of fields
// in obj whose value differs from the value at the same place in old (nil: a create,
// every occurrence differs). Items of lists are matched by index, values of maps by
// key.
func newFieldErrors(fields []NewField, obj, old map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	for _, f := range fields {
		var oldRoot interface{}
		if old != nil {
			oldRoot = old
		}
		walkNewField(obj, oldRoot, old != nil, f.Path, nil, func(p *field.Path) {
			errs = append(errs, field.Forbidden(p, f.Reason))
		})
	}
	return errs
}

// walkNewField calls found for each place path leads to in v whose value is not the
// one at the same place in old (hasOld is false when old has no such place).
func walkNewField(v, old interface{}, hasOld bool, path []string, p *field.Path, found func(*field.Path)) {
	if len(path) == 0 {
		if !hasOld || !equality.Semantic.DeepEqual(v, old) {
			found(p)
		}
		return
	}
	switch elem := path[0]; elem {
	case "[]":
		items, _ := v.([]interface{})
		olds, _ := old.([]interface{})
		for i, item := range items {
			var o interface{}
			if hasOld && i < len(olds) {
				o = olds[i]
			}
			walkNewField(item, o, hasOld && i < len(olds), path[1:], p.Index(i), found)
		}
	case "{}":
		m, _ := v.(map[string]interface{})
		olds, _ := old.(map[string]interface{})
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			o, ok := olds[k]
			walkNewField(m[k], o, hasOld && ok, path[1:], p.Key(k), found)
		}
	default:
		m, _ := v.(map[string]interface{})
		child, ok := m[elem]
		if !ok {
			return
		}
		olds, _ := old.(map[string]interface{})
		o, had := olds[elem]
		walkNewField(child, o, hasOld && had, path[1:], childPath(p, elem), found)
	}
}

// childPath is p.Child(elem), or the root path elem.
func childPath(p *field.Path, elem string) *field.Path {
	if p == nil {
		return field.NewPath(elem)
	}
	return p.Child(elem)
}
