package registry

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Predicate selects objects by label and field selectors.
type Predicate struct {
	Label labels.Selector
	Field fields.Selector
	// fieldPaths maps each selectable field to its path in the object.
	fieldPaths map[string][]string
}

// Empty reports whether the predicate matches everything.
func (p *Predicate) Empty() bool {
	return p.Label.Empty() && p.Field.Empty()
}

// NewPredicate parses the selectors of opts for version of res. A selector that does
// not parse, or a field selector on a field the version does not make selectable, is
// a 400 BadRequest.
func NewPredicate(res *Resource, version string, opts metav1.ListOptions) (*Predicate, error) {
	p := &Predicate{Label: labels.Everything(), Field: fields.Everything()}
	if opts.LabelSelector != "" {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse labelSelector %q: %v", opts.LabelSelector, err))
		}
		p.Label = sel
	}
	if opts.FieldSelector != "" {
		sel, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse fieldSelector %q: %v", opts.FieldSelector, err))
		}
		p.fieldPaths = map[string][]string{"metadata.name": {"metadata", "name"}}
		if res.Namespaced {
			p.fieldPaths["metadata.namespace"] = []string{"metadata", "namespace"}
		}
		if v := res.Version(version); v != nil {
			for _, f := range v.SelectableFields {
				path := strings.TrimPrefix(f.JSONPath, ".")
				p.fieldPaths[path] = strings.Split(path, ".")
			}
		}
		for _, req := range sel.Requirements() {
			if _, ok := p.fieldPaths[req.Field]; !ok {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
		p.Field = sel
	}
	return p, nil
}

// Matches reports whether obj satisfies both selectors.
func (p *Predicate) Matches(obj *Object) bool {
	if p == nil {
		return true
	}
	if !p.Label.Empty() && !p.Label.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	if !p.Field.Empty() {
		set := fields.Set{}
		for name, path := range p.fieldPaths {
			v, found, _ := nestedScalarString(obj.Object, path...)
			if found {
				set[name] = v
			} else {
				set[name] = ""
			}
		}
		if !p.Field.Matches(set) {
			return false
		}
	}
	return true
}

// nestedScalarString returns the field at path rendered as a selector value.
func nestedScalarString(obj map[string]interface{}, path ...string) (string, bool, error) {
	var cur interface{} = obj
	for _, p := range path {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return "", false, nil
		}
		if cur, ok = m[p]; !ok {
			return "", false, nil
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true, nil
	case bool, int64, float64:
		return fmt.Sprint(v), true, nil
	case nil:
		return "", false, nil
	}
	return "", false, fmt.Errorf("field %s is not a scalar", strings.Join(path, "."))
}
