package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/concordproject/concord/registry"
	objectschema "github.com/concordproject/concord/schema"
)

// A field path of a Version's Fields and EnumValues: property names, "[]" for the items
// of a list and "{}" for the values of a map, joined with "." (for example
// "spec.template.spec.tolerations.[].operator").
const (
	listItems = "[]"
	mapValues = "{}"
)

// UpdateSchemaAt calls update with the schema at path in s, a schema the caller owns,
// and keeps what update changes; it reports whether s has such a place. (SchemaAt's
// answer cannot be changed in place: properties are held by value.)
func UpdateSchemaAt(s *apiextensionsv1.JSONSchemaProps, path string, update func(*apiextensionsv1.JSONSchemaProps)) bool {
	return updateAt(s, strings.Split(path, "."), update)
}

func updateAt(s *apiextensionsv1.JSONSchemaProps, elems []string, update func(*apiextensionsv1.JSONSchemaProps)) bool {
	switch {
	case s == nil:
		return false
	case len(elems) == 0:
		update(s)
		return true
	case elems[0] == listItems:
		return s.Items != nil && updateAt(s.Items.Schema, elems[1:], update)
	case elems[0] == mapValues:
		return s.AdditionalProperties != nil && updateAt(s.AdditionalProperties.Schema, elems[1:], update)
	}
	p, ok := s.Properties[elems[0]]
	if !ok {
		return false
	}
	ok = updateAt(&p, elems[1:], update)
	s.Properties[elems[0]] = p
	return ok
}

// SchemaAt returns the schema at path in s (nil if s has no such place).
func SchemaAt(s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	for elem := range strings.SplitSeq(path, ".") {
		switch {
		case s == nil:
			return nil
		case elem == listItems:
			if s.Items == nil {
				return nil
			}
			s = s.Items.Schema
		case elem == mapValues:
			if s.AdditionalProperties == nil {
				return nil
			}
			s = s.AdditionalProperties.Schema
		default:
			p, ok := s.Properties[elem]
			if !ok {
				return nil
			}
			s = &p
		}
	}
	return s
}

// validateFields checks a version's field history against its schema and lifecycle:
// every path is in the schema, every release after the version's introduction and at
// most the newest, every enum value one of the schema's.
func validateFields(v *Version, newest *version.Version, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	checkRelease := func(fp *field.Path, r *version.Version) {
		switch {
		case r == nil:
			errs = append(errs, field.Required(fp, "a release"))
		case v.Introduced != nil && !r.GreaterThan(v.Introduced):
			errs = append(errs, field.Invalid(fp, r.String(), fmt.Sprintf("must be after the version's introduction (%s)", v.Introduced)))
		case r.GreaterThan(newest):
			errs = append(errs, field.Invalid(fp, r.String(), fmt.Sprintf("is after the newest release of the catalog (%s)", newest)))
		}
	}
	for _, path := range sortedKeys(v.Fields) {
		fp := p.Child("fields").Key(path)
		if SchemaAt(v.Schema, path) == nil {
			errs = append(errs, field.NotFound(fp, path))
		}
		checkRelease(fp, v.Fields[path])
	}
	for _, path := range sortedKeys(v.EnumValues) {
		fp := p.Child("enumValues").Key(path)
		s := SchemaAt(v.Schema, path)
		if s == nil {
			errs = append(errs, field.NotFound(fp, path))
			continue
		}
		for _, value := range sortedKeys(v.EnumValues[path]) {
			if !slices.ContainsFunc(s.Enum, func(e apiextensionsv1.JSON) bool { return enumValue(e) == value }) {
				errs = append(errs, field.NotFound(fp.Key(value), "not one of the schema's enum values"))
			}
			checkRelease(fp.Key(value), v.EnumValues[path][value])
		}
	}
	return errs
}

// enumValue is the string an enum value stands for ("" for a value that is not a
// string).
func enumValue(e apiextensionsv1.JSON) string {
	var s string
	if json.Unmarshal(e.Raw, &s) != nil {
		return ""
	}
	return s
}

// at returns v as a build of release rel knows it: without the fields and enum values
// introduced after rel (its schema is then a new copy).
func (v Version) at(rel *version.Version) Version {
	later := func(r *version.Version) bool { return r.GreaterThan(rel) }
	if !v.hasAfter(later) {
		return v
	}
	s := v.Schema.DeepCopy()
	fields := map[string]*version.Version{}
	for path, r := range v.Fields {
		if later(r) {
			removeAt(s, path)
		} else {
			fields[path] = r
		}
	}
	enums := map[string]map[string]*version.Version{}
	for path, values := range v.EnumValues {
		for value, r := range values {
			if later(r) {
				dropEnumValue(s, path, value)
			} else {
				if enums[path] == nil {
					enums[path] = map[string]*version.Version{}
				}
				enums[path][value] = r
			}
		}
	}
	v.Schema, v.Fields, v.EnumValues = s, fields, enums
	return v
}

// hasAfter reports whether a field or an enum value of v was introduced at a release
// after says.
func (v Version) hasAfter(after func(*version.Version) bool) bool {
	for _, r := range v.Fields {
		if after(r) {
			return true
		}
	}
	for _, values := range v.EnumValues {
		for _, r := range values {
			if after(r) {
				return true
			}
		}
	}
	return false
}

// removeAt deletes the property at path from s (a schema owned by the caller; its
// maps are its own, DeepCopy copies them).
func removeAt(s *apiextensionsv1.JSONSchemaProps, path string) {
	i := strings.LastIndex(path, ".")
	name := path[i+1:]
	if name == listItems || name == mapValues {
		return // a list's items or a map's values go with their field
	}
	remove := func(p *apiextensionsv1.JSONSchemaProps) {
		delete(p.Properties, name)
		p.Required = slices.DeleteFunc(slices.Clone(p.Required), func(r string) bool { return r == name })
	}
	if i < 0 {
		remove(s)
		return
	}
	UpdateSchemaAt(s, path[:i], remove)
}

// dropEnumValue removes value from the enum at path in s (a schema owned by the
// caller).
func dropEnumValue(s *apiextensionsv1.JSONSchemaProps, path, value string) {
	UpdateSchemaAt(s, path, func(at *apiextensionsv1.JSONSchemaProps) {
		// A new slice: JSONSchemaProps.DeepCopy shares the enum's array.
		at.Enum = slices.DeleteFunc(slices.Clone(at.Enum), func(e apiextensionsv1.JSON) bool { return enumValue(e) == value })
	})
}

// writable returns what a server whose minimum compatibility version is minCompat
// writes of v: its schema without the enum values introduced after minCompat and
// without the defaults of the fields introduced after it (a new copy when anything
// changes), and those fields, in which the server takes no new data.
func (v *Version) writable(minCompat *version.Version, gv string) (*apiextensionsv1.JSONSchemaProps, []registry.NewField) {
	later := func(r *version.Version) bool { return minCompat != nil && r.GreaterThan(minCompat) }
	if !v.hasAfter(later) {
		return v.Schema, nil
	}
	s := v.Schema.DeepCopy()
	var fields []registry.NewField
	for _, path := range sortedKeys(v.Fields) {
		r := v.Fields[path]
		if !later(r) || strings.HasSuffix(path, "."+listItems) || strings.HasSuffix(path, "."+mapValues) {
			continue
		}
		if pr := v.Fields[ParentField(path)]; pr != nil && later(pr) {
			continue // its parent is refused already
		}
		UpdateSchemaAt(s, path, func(at *apiextensionsv1.JSONSchemaProps) { at.Default = nil })
		fields = append(fields, registry.NewField{Path: strings.Split(path, "."), Reason: fmt.Sprintf(
			"%s field introduced in release %s: the servers stay readable by release %s (--min-compatibility-version), which would lose it; it can be set once the minimum compatibility version is %s or later",
			gv, r, minCompat, r)})
	}
	for path, values := range v.EnumValues {
		for value, r := range values {
			if later(r) {
				dropEnumValue(s, path, value)
			}
		}
	}
	return s, fields
}

// ParentField is the path of the field a field belongs to, skipping list items and
// map values ("a.[].b" → "a"; "" for a top-level field).
func ParentField(path string) string {
	for {
		i := strings.LastIndex(path, ".")
		if i < 0 {
			return ""
		}
		path = path[:i]
		if !strings.HasSuffix(path, listItems) && !strings.HasSuffix(path, mapValues) {
			return path
		}
	}
}

// writableVersion is a version's writable schema at one minimum compatibility release
// (Version.writable), and its compilation. It is shared by every registry.Resource
// built for that release, and never changed; its newFields are copied where they are
// handed out.
type writableVersion struct {
	schema    *apiextensionsv1.JSONSchemaProps
	newFields []registry.NewField
	// compile returns schema compiled, compiling it on the first call (nil with a nil
	// schema).
	compile func() (*objectschema.Schema, error)
}

// writableKey names a writableVersion: a catalog version and a minimum compatibility
// release ("" for none).
type writableKey struct {
	v         *Version
	minCompat string
}

// writables are the versions' writable schemas, made once per process and compiled
// once, on first use: every server of a release uses the same ones, and compiling
// all of them (71 resources in kube's catalog) was a fifth of a server's start, most
// of it for resources the server then never writes or reads.
var writables sync.Map // writableKey → *onceWritable

type onceWritable struct {
	once sync.Once
	w    writableVersion

	compileOnce sync.Once
	compiled    *objectschema.Schema
	compileErr  error
}

// writableOf returns v.writable(minCompat, gv), its compilation left to the first
// call of its compile.
func (v *Version) writableOf(minCompat *version.Version, gv string) writableVersion {
	key := writableKey{v: v}
	if minCompat != nil {
		key.minCompat = minCompat.String()
	}
	e, _ := writables.LoadOrStore(key, &onceWritable{})
	o := e.(*onceWritable)
	o.once.Do(func() {
		o.w.schema, o.w.newFields = v.writable(minCompat, gv)
		o.w.compile = o.compile
	})
	return o.w
}

// compile compiles the writable schema once; every caller gets that result.
func (o *onceWritable) compile() (*objectschema.Schema, error) {
	o.compileOnce.Do(func() {
		if o.w.schema == nil {
			return
		}
		// Shared by every server of the process, the compilation belongs to no
		// caller: none may cancel it.
		ctx := context.Background() //nolint:forbidigo // see above
		o.compiled, o.compileErr = objectschema.Compile(ctx, o.w.schema, field.NewPath("schema", "openAPIV3Schema"))
	})
	return o.compiled, o.compileErr
}
