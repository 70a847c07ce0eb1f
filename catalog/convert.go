package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/klog/v2"
)

// PreservedFieldsAnnotation is the annotation in which the Converter keeps the fields of
// an object that the version it was converted to has no place for. Its value is a JSON
// object mapping JSON Pointers (RFC 6901, e.g. "/spec/metrics/0/resource/target") to the
// values found there. The annotation belongs to the converter: a value that is not such
// an object is discarded.
const PreservedFieldsAnnotation = "concord.io/conversion-preserved"

// Converter converts objects of one catalog resource between its versions, guided by
// the versions' schemas, and implements registry.Converter.
//
// A schema declares a field when it lists it (properties) or types the values of a map
// (additionalProperties with a schema); it has a place for a field it declares, and for
// any field below x-kubernetes-preserve-unknown-fields or additionalProperties: true. A
// version without a schema has a place for every field and declares none. Converting
// an object from version A to version B sets its apiVersion to B and then:
//   - every preserved field (see PreservedFieldsAnnotation) that B has a place for, with
//     a value of the type B gives it, is put back, unless the object already has a
//     value there (the object's own value wins and the preserved one is dropped);
//   - every field A declares that B has no place for, or that both declare with
//     different types, is moved out of the object into the annotation;
//   - every other field stays where it is, including fields A does not declare.
//
// So an object converted A → B → A comes back as it was, and so does one taken through
// any chain of versions back to where it started. The field values themselves are not
// translated (no renames, no unit changes): catalog resources are stored and served,
// and no controller acts on them.
//
// A Converter is immutable and safe for concurrent use.
type Converter struct {
	gr      schema.GroupResource
	schemas map[string]*node
}

// converters are the resources' converters, made once per process: a Resource of a
// catalog is read-only, and every server of a release has the same ones (Default and
// its truncations, which Truncate keeps). An entry lives as long as the process, as
// the catalog it belongs to does in a server; a process that parses many catalogs
// (tests, --api-catalog in upgrade-check) keeps theirs too.
var converters sync.Map // *Resource → *Converter

// converterOf returns r's converter, made once per process.
func converterOf(r *Resource) *Converter {
	if c, ok := converters.Load(r); ok {
		return c.(*Converter)
	}
	c, _ := converters.LoadOrStore(r, NewConverter(r))
	return c.(*Converter)
}

// NewConverter returns the converter for r's versions. It is safe for concurrent use.
func NewConverter(r *Resource) *Converter {
	c := &Converter{gr: r.GroupResource(), schemas: make(map[string]*node, len(r.Versions))}
	compiled := map[*apiextensionsv1.JSONSchemaProps]*node{}
	for _, v := range r.Versions {
		n, ok := compiled[v.Schema]
		if !ok {
			n = compileNode(v.Schema)
			compiled[v.Schema] = n
		}
		c.schemas[v.Name] = n
	}
	return c
}

// Convert converts every object in objs (each in any version of the resource) to
// toVersion in place. An object of another group, or a version the resource does not
// have, is an error wrapping ErrUnknownVersion and naming the object; objs are then
// unspecified.
func (c *Converter) Convert(ctx context.Context, objs []*unstructured.Unstructured, toVersion string) error {
	dst, ok := c.schemas[toVersion]
	if !ok {
		return fmt.Errorf("%w: cannot convert %s to version %q", ErrUnknownVersion, c.gr, toVersion)
	}
	logger := klog.FromContext(ctx)
	apiVersion := schema.GroupVersion{Group: c.gr.Group, Version: toVersion}.String()
	for _, obj := range objs {
		if obj.GetAPIVersion() == apiVersion {
			continue
		}
		gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
		src, known := c.schemas[gv.Version]
		if err != nil || gv.Group != c.gr.Group || !known {
			return fmt.Errorf("%w: %s %s has apiVersion %q, not a version of the resource", ErrUnknownVersion, c.gr, klog.KObj(obj), obj.GetAPIVersion())
		}
		restored, moved, err := c.convert(logger, obj, src, dst)
		if err != nil {
			return fmt.Errorf("converting %s %s to %s: %w", c.gr, klog.KObj(obj), toVersion, err)
		}
		obj.SetAPIVersion(apiVersion)
		if restored+moved > 0 {
			logger.V(5).Info("Converted object between versions with different fields",
				"resource", c.gr, "object", klog.KObj(obj), "from", gv.Version, "to", toVersion,
				"restoredFields", restored, "preservedFields", moved)
		}
	}
	return nil
}

// convert moves fields of obj between the object and the annotation for a conversion
// from the version of schema src to the version of schema dst, and reports how many
// preserved fields were restored and how many were moved out. It fails only if a
// moved value cannot be encoded as JSON.
func (c *Converter) convert(logger klog.Logger, obj *unstructured.Unstructured, src, dst *node) (restored, moved int, err error) {
	preserved := map[string]interface{}{}
	if raw, ok := obj.GetAnnotations()[PreservedFieldsAnnotation]; ok {
		if err := utiljson.Unmarshal([]byte(raw), &preserved); err != nil || preserved == nil {
			logger.V(2).Info("Discarding an unreadable preserved-fields annotation", "resource", c.gr, "object", klog.KObj(obj), "annotation", PreservedFieldsAnnotation, "err", err)
			preserved = map[string]interface{}{}
		}
	}

	for _, ptr := range sortedKeys(preserved) {
		path, ok := parsePointer(ptr)
		if !ok || len(path) == 0 || isRootMeta(path[0]) {
			delete(preserved, ptr)
			continue
		}
		switch restore(obj.Object, dst, path, preserved[ptr]) {
		case restoredField:
			restored++
			delete(preserved, ptr)
		case alreadySet:
			delete(preserved, ptr)
		}
	}

	for k, v := range obj.Object {
		if isRootMeta(k) {
			continue
		}
		moved += moveUnknown(obj.Object, k, v, src, dst, "", preserved)
	}

	annotations := obj.GetAnnotations()
	if len(preserved) == 0 {
		if _, ok := annotations[PreservedFieldsAnnotation]; ok {
			delete(annotations, PreservedFieldsAnnotation)
			if len(annotations) == 0 {
				annotations = nil // drop the emptied map too
			}
			obj.SetAnnotations(annotations)
		}
		return restored, moved, nil
	}
	data, err := json.Marshal(preserved)
	if err != nil {
		return restored, moved, fmt.Errorf("encoding the fields to preserve: %w", err)
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[PreservedFieldsAnnotation] = string(data)
	obj.SetAnnotations(annotations)
	return restored, moved, nil
}

// isRootMeta reports whether a top-level field belongs to the server rather than to
// the version's schema.
func isRootMeta(k string) bool {
	return k == "apiVersion" || k == "kind" || k == "metadata"
}

// moveUnknown looks at field k (value v) of the map parent, whose schemas in the source
// and target versions are src and dst, moves it into preserved if the source declares
// it and the target has no place for it (or types it differently), and otherwise
// descends into it. It returns the number of fields moved.
func moveUnknown(parent map[string]interface{}, k string, v interface{}, src, dst *node, ptr string, preserved map[string]interface{}) int {
	sc, _, srcDeclares := src.child(k)
	if !srcDeclares {
		return 0
	}
	dc, dstPlace, dstDeclares := dst.child(k)
	ptr += "/" + escapePointer(k)
	if !dstPlace || (dstDeclares && !dc.fits(v) && sc.fits(v)) {
		preserved[ptr] = v
		delete(parent, k)
		return 1
	}
	return moveBelow(v, sc, dc, ptr, preserved)
}

// moveBelow descends into v, a value whose schemas are src and dst.
func moveBelow(v interface{}, src, dst *node, ptr string, preserved map[string]interface{}) int {
	n := 0
	switch v := v.(type) {
	case map[string]interface{}:
		for k, child := range v {
			n += moveUnknown(v, k, child, src, dst, ptr, preserved)
		}
	case []interface{}:
		si, di := src.item(), dst.item()
		for i, child := range v {
			n += moveBelow(child, si, di, ptr+"/"+strconv.Itoa(i), preserved)
		}
	}
	return n
}

type restoreResult int

const (
	// restoredField: the value was put back.
	restoredField restoreResult = iota
	// alreadySet: the object has a value there already, which wins.
	alreadySet
	// notPlaced: the target has no place for the value, or the object has no container
	// for it (a list item that is gone); it stays preserved.
	notPlaced
)

// restore puts value at path in obj if the target schema root has a place for it there,
// creating missing intermediate objects (never list items).
func restore(obj map[string]interface{}, root *node, path []string, value interface{}) restoreResult {
	s := root
	var container interface{} = obj
	for i, seg := range path {
		last := i == len(path)-1
		switch c := container.(type) {
		case map[string]interface{}:
			child, place, _ := s.child(seg)
			if !place {
				return notPlaced
			}
			s = child
			next, exists := c[seg]
			if last {
				if exists {
					return alreadySet
				}
				if !s.fits(value) {
					return notPlaced
				}
				c[seg] = value
				return restoredField
			}
			if !exists {
				if !s.fits(map[string]interface{}{}) {
					return notPlaced
				}
				next = map[string]interface{}{}
				c[seg] = next
			}
			container = next
		case []interface{}:
			idx, err := strconv.Atoi(seg)
			if err != nil || idx < 0 || idx >= len(c) || last {
				// Whole list items are never preserved on their own: their list is.
				return notPlaced
			}
			s = s.item()
			container = c[idx]
		default:
			return notPlaced
		}
	}
	return notPlaced
}

// node is the part of a version's schema the converter needs: which fields exist and
// what JSON type they hold. A nil *node has a place for every field and value, and
// declares none.
type node struct {
	typ         string
	intOrString bool
	props       map[string]*node
	// additional is the schema of the values of a map (additionalProperties).
	additional *node
	// anyField: fields not in props have a place (additionalProperties, or
	// x-kubernetes-preserve-unknown-fields); additional, if set, is their schema and
	// declares them.
	anyField bool
	items    *node
	embedded bool
}

// compileNode compiles a schema; a nil schema compiles to nil (anything goes).
func compileNode(s *apiextensionsv1.JSONSchemaProps) *node {
	if s == nil {
		return nil
	}
	n := &node{
		typ:         s.Type,
		intOrString: s.XIntOrString,
		anyField:    s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields,
		embedded:    s.XEmbeddedResource,
	}
	if len(s.Properties) > 0 {
		n.props = make(map[string]*node, len(s.Properties))
		for k := range s.Properties {
			p := s.Properties[k]
			n.props[k] = compileNode(&p)
		}
	}
	if ap := s.AdditionalProperties; ap != nil && (ap.Allows || ap.Schema != nil) {
		n.anyField = true
		n.additional = compileNode(ap.Schema)
	}
	if s.Items != nil {
		n.items = compileNode(s.Items.Schema)
	}
	return n
}

// child returns the schema of field k of an object of schema n, whether n has a place
// for the field, and whether it declares it.
func (n *node) child(k string) (c *node, place, declares bool) {
	switch {
	case n == nil:
		return nil, true, false
	case n.props[k] != nil:
		return n.props[k], true, true
	case n.embedded && isRootMeta(k):
		return nil, true, false
	case n.anyField:
		return n.additional, true, n.additional != nil
	}
	return nil, false, false
}

// item returns the schema of the items of a list of schema n.
func (n *node) item() *node {
	if n == nil {
		return nil
	}
	return n.items
}

// fits reports whether v has the JSON type schema n gives (an untyped schema takes
// any value; null fits anywhere).
func (n *node) fits(v interface{}) bool {
	if n == nil || n.typ == "" && !n.intOrString {
		return true
	}
	switch v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		return n.typ == "object"
	case []interface{}:
		return n.typ == "array"
	case string:
		return n.typ == "string" || n.intOrString
	case bool:
		return n.typ == "boolean"
	case int64, int32, int, float64, float32, json.Number:
		return n.typ == "integer" || n.typ == "number" || n.intOrString
	}
	return false
}

// escapePointer escapes one JSON Pointer reference token.
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// parsePointer splits a JSON Pointer into its unescaped reference tokens.
func parsePointer(ptr string) ([]string, bool) {
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	tokens := strings.Split(ptr[1:], "/")
	for i, t := range tokens {
		if strings.Contains(t, "~") {
			tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		}
	}
	return tokens, !slices.Contains(tokens, "")
}
