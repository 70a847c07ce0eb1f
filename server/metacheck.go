package server

import (
	"iter"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A valueCheck vouches for one decoded JSON value (objectjson's types) against the Go
// type it was built for: true means that decoding the value's JSON into that type
// with sigs.k8s.io/json's strict decoder (unknown fields disallowed) can neither fail
// nor report a strict error. false says nothing: the caller decodes to find out.
type valueCheck func(v interface{}) bool

// objectMetaValid vouches for a metadata map as normalizeMetadata's round trip through
// metav1.ObjectMeta would: when it returns true, the round trip would find no unknown
// field and no wrongly typed value, so it can be skipped. Every field of ObjectMeta
// and of the types inside it is known from their json tags, so a field that a newer
// apimachinery adds is recognised without a change here.
var objectMetaValid = checkType(reflect.TypeFor[metav1.ObjectMeta]())

var (
	timeType     = reflect.TypeFor[metav1.Time]()
	fieldsV1Type = reflect.TypeFor[metav1.FieldsV1]()
)

// checkType builds the valueCheck of t. JSON null decodes into every type without
// error (it leaves the value as it was), so every check accepts nil.
func checkType(t reflect.Type) valueCheck {
	switch t {
	case timeType:
		// metav1.Time decodes a string in RFC 3339, as time.Parse reads it.
		return func(v interface{}) bool {
			switch v := v.(type) {
			case nil:
				return true
			case string:
				_, err := time.Parse(time.RFC3339, v)
				return err == nil
			}
			return false
		}
	case fieldsV1Type:
		// metav1.FieldsV1 keeps any JSON value as raw bytes.
		return func(interface{}) bool { return true }
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkType(t.Elem())
	case reflect.String:
		return func(v interface{}) bool {
			_, ok := v.(string)
			return ok || v == nil
		}
	case reflect.Bool:
		return func(v interface{}) bool {
			_, ok := v.(bool)
			return ok || v == nil
		}
	case reflect.Int64:
		// objectjson gives int64 exactly for the integer literals that fit.
		return func(v interface{}) bool {
			_, ok := v.(int64)
			return ok || v == nil
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		elem := checkType(t.Elem())
		return func(v interface{}) bool {
			m, ok := v.(map[string]interface{})
			return v == nil || ok && every(maps.Values(m), elem)
		}
	case reflect.Slice:
		elem := checkType(t.Elem())
		return func(v interface{}) bool {
			a, ok := v.([]interface{})
			return v == nil || ok && every(slices.Values(a), elem)
		}
	case reflect.Struct:
		if fields, ok := structFields(t); ok {
			return func(v interface{}) bool {
				if v == nil {
					return true
				}
				m, ok := v.(map[string]interface{})
				if !ok {
					return false
				}
				for k, e := range m {
					check, known := fields[k]
					if !known || !check(e) {
						return false
					}
				}
				return true
			}
		}
	}
	return func(interface{}) bool { return false }
}

// every reports whether check vouches for every value of values.
func every(values iter.Seq[interface{}], check valueCheck) bool {
	for v := range values {
		if !check(v) {
			return false
		}
	}
	return true
}

// structFields maps the JSON names of t's fields to their checks; ok is false for a
// struct whose decoding this file does not model (embedded fields, custom decoders).
func structFields(t reflect.Type) (map[string]valueCheck, bool) {
	if reflect.PointerTo(t).Implements(reflect.TypeFor[interface{ UnmarshalJSON([]byte) error }]()) {
		return nil, false
	}
	fields := map[string]valueCheck{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		if f.Anonymous {
			return nil, false
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		fields[name] = checkType(f.Type)
	}
	return fields, true
}
