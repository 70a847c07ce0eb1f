package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// schemaBuilder derives structural OpenAPI v3 schemas from Go API types by reflection,
// the way their JSON encoding shapes them, with the list and map markers of their
// source files (+listType, +listMapKey, +mapType, +structType).
type schemaBuilder struct {
	markers *markerIndex
	// visiting guards against recursive types.
	visiting map[reflect.Type]bool
}

func newSchemaBuilder() *schemaBuilder {
	return &schemaBuilder{markers: newMarkerIndex(), visiting: map[reflect.Type]bool{}}
}

var (
	typeMetaType    = reflect.TypeFor[metav1.TypeMeta]()
	objectMetaType  = reflect.TypeFor[metav1.ObjectMeta]()
	fieldsV1Type    = reflect.TypeFor[metav1.FieldsV1]()
	rawExtension    = reflect.TypeFor[runtime.RawExtension]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()

	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	oneOfTyped      = reflect.TypeFor[interface{ OpenAPIV3OneOfTypes() []string }]()
	schemaTyped     = reflect.TypeFor[interface {
		OpenAPISchemaType() []string
		OpenAPISchemaFormat() string
	}]()
)

// object returns the schema of a whole API object of struct type t: apiVersion and kind,
// metadata as a bare object (the server owns it), and the rest derived.
func (b *schemaBuilder) object(t reflect.Type) (*apiextensionsv1.JSONSchemaProps, error) {
	s, err := b.structSchema(t, true)
	if err != nil {
		return nil, err
	}
	if _, ok := s.Properties["metadata"]; !ok {
		return nil, fmt.Errorf("%v has no metadata: not an API object", t)
	}
	return &s, nil
}

// structSchema derives the schema of a struct; root is true for a whole API object.
func (b *schemaBuilder) structSchema(t reflect.Type, root bool) (apiextensionsv1.JSONSchemaProps, error) {
	s := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	if err := b.fields(t, root, s.Properties); err != nil {
		return s, err
	}
	if len(s.Properties) == 0 {
		s.Properties = nil
	}
	return s, nil
}

// fields adds the JSON fields of struct t to props, flattening inlined structs.
func (b *schemaBuilder) fields(t reflect.Type, root bool, props map[string]apiextensionsv1.JSONSchemaProps) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := slices.Contains(strings.Split(opts, ","), "inline")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft == typeMetaType:
			props["apiVersion"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
			props["kind"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
			continue
		case (f.Anonymous && name == "") || inline:
			if ft.Kind() != reflect.Struct {
				return fmt.Errorf("%v.%s: only structs can be inlined", t, f.Name)
			}
			if err := b.fields(ft, root, props); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := props[name]; dup {
			return fmt.Errorf("%v: JSON field %q appears twice", t, name)
		}
		if ft == objectMetaType {
			if root {
				// The server owns an object's own metadata.
				props[name] = apiextensionsv1.JSONSchemaProps{Type: "object"}
			} else {
				// A nested ObjectMeta (a template's) is kept whole.
				props[name] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
			}
			continue
		}
		m, err := b.markers.field(t, f)
		if err != nil {
			return err
		}
		s, err := b.schema(ft, m)
		if err != nil {
			return fmt.Errorf("%v.%s: %w", t, f.Name, err)
		}
		if s.Default, err = fieldDefault(t, f); err != nil {
			return fmt.Errorf("%v.%s: %w", t, f.Name, err)
		}
		props[name] = s
	}
	return nil
}

// schema derives the schema of a value of type t; m are the markers of the field that
// holds it.
func (b *schemaBuilder) schema(t reflect.Type, m markers) (apiextensionsv1.JSONSchemaProps, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tm, err := b.markers.typ(t)
	if err != nil {
		return apiextensionsv1.JSONSchemaProps{}, err
	}
	m = m.over(tm)

	switch {
	case t == quantityType || t == intOrStringType:
		return apiextensionsv1.JSONSchemaProps{XIntOrString: true}, nil
	case t == rawExtension || t == fieldsV1Type || t == objectMetaType:
		return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}, nil
	case t.Implements(oneOfTyped):
		return apiextensionsv1.JSONSchemaProps{}, fmt.Errorf("%v declares several OpenAPI types and has no schema rule", t)
	case t.Implements(schemaTyped):
		// Times, durations: the type says how it encodes.
		v := reflect.Zero(t).Interface().(interface {
			OpenAPISchemaType() []string
			OpenAPISchemaFormat() string
		})
		types := v.OpenAPISchemaType()
		if len(types) != 1 {
			return apiextensionsv1.JSONSchemaProps{}, fmt.Errorf("%v declares OpenAPI types %v", t, types)
		}
		return apiextensionsv1.JSONSchemaProps{Type: types[0], Format: v.OpenAPISchemaFormat()}, nil
	case reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
		return apiextensionsv1.JSONSchemaProps{}, fmt.Errorf("%v encodes itself and has no schema rule", t)
	}

	switch t.Kind() {
	case reflect.Bool:
		return apiextensionsv1.JSONSchemaProps{Type: "boolean"}, nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}, nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}, nil
	case reflect.Float32:
		return apiextensionsv1.JSONSchemaProps{Type: "number", Format: "float"}, nil
	case reflect.Float64:
		return apiextensionsv1.JSONSchemaProps{Type: "number", Format: "double"}, nil
	case reflect.String:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}, nil
	case reflect.Interface:
		return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr.To(true)}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "byte"}, nil
		}
		items, err := b.schema(t.Elem(), markers{})
		if err != nil {
			return items, err
		}
		return m.list(apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}})
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return apiextensionsv1.JSONSchemaProps{}, fmt.Errorf("%v: map keys must be strings", t)
		}
		values, err := b.schema(t.Elem(), markers{})
		if err != nil {
			return values, err
		}
		return m.object(apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values}})
	case reflect.Struct:
		if b.visiting[t] {
			// A recursive type: below the first level, keep whatever is there.
			return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}, nil
		}
		b.visiting[t] = true
		defer delete(b.visiting, t)
		s, err := b.structSchema(t, false)
		if err != nil {
			return s, err
		}
		return m.object(s)
	}
	return apiextensionsv1.JSONSchemaProps{}, fmt.Errorf("no schema rule for %v (kind %s)", t, t.Kind())
}

// markers are the list and map markers that apply to one field or type.
type markers struct {
	listType    string
	listMapKeys []string
	mapType     string
}

// over returns m completed by the markers of the field's type (the field's win).
func (m markers) over(t markers) markers {
	if m.listType == "" {
		m.listType, m.listMapKeys = t.listType, t.listMapKeys
	}
	if m.mapType == "" {
		m.mapType = t.mapType
	}
	return m
}

// list applies list markers to an array schema.
func (m markers) list(s apiextensionsv1.JSONSchemaProps) (apiextensionsv1.JSONSchemaProps, error) {
	if m.mapType != "" {
		return s, fmt.Errorf("map or struct marker %q on a list", m.mapType)
	}
	switch m.listType {
	case "":
		if len(m.listMapKeys) > 0 {
			return s, fmt.Errorf("+listMapKey without +listType=map")
		}
		return s, nil
	case "atomic", "set":
		if len(m.listMapKeys) > 0 {
			return s, fmt.Errorf("+listMapKey with +listType=%s", m.listType)
		}
	case "map":
		if len(m.listMapKeys) == 0 {
			return s, fmt.Errorf("+listType=map without +listMapKey")
		}
		for _, k := range m.listMapKeys {
			if _, ok := s.Items.Schema.Properties[k]; !ok {
				return s, fmt.Errorf("+listMapKey=%s is not a field of the list's items", k)
			}
		}
		s.XListMapKeys = m.listMapKeys
	default:
		return s, fmt.Errorf("unknown +listType=%s", m.listType)
	}
	s.XListType = ptr.To(m.listType)
	return s, nil
}

// object applies map and struct markers to an object schema.
func (m markers) object(s apiextensionsv1.JSONSchemaProps) (apiextensionsv1.JSONSchemaProps, error) {
	if m.listType != "" || len(m.listMapKeys) > 0 {
		return s, fmt.Errorf("list marker on an object")
	}
	switch m.mapType {
	case "":
	case "atomic", "granular":
		s.XMapType = ptr.To(m.mapType)
	default:
		return s, fmt.Errorf("unknown map or struct type %q", m.mapType)
	}
	return s, nil
}

// markerIndex reads markers from the Go source of the packages the types come from,
// one package at a time, as they are needed.
type markerIndex struct {
	fset *token.FileSet
	// sources maps the import path of every package this program is built from to its
	// directory and Go files; loaded on first use.
	sources map[string]packageSource
	// pkgs maps a package path to its markers, keyed by "Type" and "Type.Field".
	pkgs map[string]map[string]markers
}

type packageSource struct {
	dir   string
	files []string
}

func newMarkerIndex() *markerIndex {
	return &markerIndex{fset: token.NewFileSet(), pkgs: map[string]map[string]markers{}}
}

// typ returns the markers on the declaration of named type t.
func (x *markerIndex) typ(t reflect.Type) (markers, error) {
	if t.PkgPath() == "" || t.Name() == "" {
		return markers{}, nil
	}
	pkg, err := x.pkg(t.PkgPath())
	return pkg[t.Name()], err
}

// field returns the markers in the doc comment of field f of struct t.
func (x *markerIndex) field(t reflect.Type, f reflect.StructField) (markers, error) {
	pkg, err := x.pkg(t.PkgPath())
	return pkg[t.Name()+"."+f.Name], err
}

// pkg returns the markers of a package. A package whose source is not among this
// program's dependencies (a test's own types) has none.
func (x *markerIndex) pkg(path string) (map[string]markers, error) {
	if m, ok := x.pkgs[path]; ok {
		return m, nil
	}
	if x.sources == nil {
		sources, err := dependencySources()
		if err != nil {
			return nil, err
		}
		x.sources = sources
	}
	m := map[string]markers{}
	src := x.sources[path]
	for _, name := range src.files {
		file, err := parser.ParseFile(x.fset, filepath.Join(src.dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing the source of %s: %w", path, err)
		}
		fileMarkers(file, m)
	}
	x.pkgs[path] = m
	return m, nil
}

// dependencySources asks the go command, once, where the source of every package this
// generator depends on is.
func dependencySources() (map[string]packageSource, error) {
	_, self, _, ok := goruntime.Caller(0)
	if !ok {
		return nil, fmt.Errorf("cannot locate the generator's source")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", ".")
	cmd.Dir = filepath.Dir(self)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	sources := map[string]packageSource{}
	for line := range strings.Lines(string(out)) {
		path, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		dir, files, _ := strings.Cut(rest, "\t")
		sources[path] = packageSource{dir: dir, files: strings.Fields(files)}
	}
	return sources, nil
}

// fileMarkers adds to m the markers of the type declarations and struct fields of file.
func fileMarkers(file *ast.File, m map[string]markers) {
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			if tm := parsedMarkers(doc); tm.listType != "" || tm.mapType != "" || len(tm.listMapKeys) > 0 {
				m[ts.Name.Name] = tm
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fld := range st.Fields.List {
				names := fld.Names
				if len(names) == 0 {
					names = []*ast.Ident{embeddedName(fld.Type)}
				}
				fm := parsedMarkers(fld.Doc)
				for _, n := range names {
					if n != nil {
						m[ts.Name.Name+"."+n.Name] = fm
					}
				}
			}
		}
	}
}

// embeddedName returns the field name of an embedded field's type expression.
func embeddedName(e ast.Expr) *ast.Ident {
	switch e := e.(type) {
	case *ast.Ident:
		return e
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel
	}
	return nil
}

// parsedMarkers reads +listType, +listMapKey, +mapType and +structType from a comment.
func parsedMarkers(doc *ast.CommentGroup) markers {
	var m markers
	if doc == nil {
		return m
	}
	for _, c := range doc.List {
		line := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch key {
		case "+listType":
			m.listType = value
		case "+listMapKey":
			m.listMapKeys = append(m.listMapKeys, value)
		case "+mapType", "+structType":
			m.mapType = value
		}
	}
	return m
}
