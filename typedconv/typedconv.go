package typedconv

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"time"

	"github.com/concordproject/concord/objectjson"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromUnstructured sets out, a pointer to a Go type, from content, exactly as
// runtime.DefaultUnstructuredConverter.FromUnstructured does.
func FromUnstructured(content map[string]interface{}, out runtime.Object) error {
	meta, _ := content["metadata"].(map[string]interface{})
	raw, _ := meta["managedFields"].([]interface{})
	if len(raw) == 0 {
		return runtime.DefaultUnstructuredConverter.FromUnstructured(content, out)
	}
	entries, ok := managedFields(raw)
	if !ok {
		return runtime.DefaultUnstructuredConverter.FromUnstructured(content, out)
	}
	accessor, err := apimeta.Accessor(out)
	if err != nil {
		return runtime.DefaultUnstructuredConverter.FromUnstructured(content, out)
	}
	top, rest := maps.Clone(content), maps.Clone(meta)
	delete(rest, "managedFields")
	top["metadata"] = rest
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(top, out); err != nil {
		return err
	}
	accessor.SetManagedFields(entries)
	return nil
}

// ManagedFields returns the managed fields of an unstructured object's content, as
// unstructured.Unstructured's GetManagedFields returns them.
func ManagedFields(content map[string]interface{}) []metav1.ManagedFieldsEntry {
	meta, _ := content["metadata"].(map[string]interface{})
	if raw, ok := meta["managedFields"].([]interface{}); ok && len(raw) > 0 {
		if entries, ok := managedFields(raw); ok {
			return entries
		}
	}
	return (&unstructured.Unstructured{Object: content}).GetManagedFields()
}

// managedFields returns the entries raw holds, or false where an entry is anything but
// what the generic converter reads without a doubt: a map of the entry's own fields,
// each of its JSON type, a time in RFC 3339, fieldsV1 an object.
func managedFields(raw []interface{}) ([]metav1.ManagedFieldsEntry, bool) {
	out := make([]metav1.ManagedFieldsEntry, len(raw))
	for i, r := range raw {
		m, ok := r.(map[string]interface{})
		if !ok {
			return nil, false
		}
		for k, v := range m {
			if !entryField(&out[i], k, v) {
				return nil, false
			}
		}
	}
	return out, true
}

// entryField sets the field k of e to v, or reports false.
func entryField(e *metav1.ManagedFieldsEntry, k string, v interface{}) bool {
	if k == "fieldsV1" {
		return setFieldsV1(e, v)
	}
	if v == nil {
		// A null string is the empty string; a null time is the generic converter's.
		return k != "time" && knownString(k)
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	switch k {
	case "manager":
		e.Manager = s
	case "operation":
		e.Operation = metav1.ManagedFieldsOperationType(s)
	case "apiVersion":
		e.APIVersion = s
	case "fieldsType":
		e.FieldsType = s
	case "subresource":
		e.Subresource = s
	case "time":
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return false
		}
		e.Time = &metav1.Time{Time: t.Local()}
	default:
		return false
	}
	return true
}

// knownString reports whether k names a string field of an entry.
func knownString(k string) bool {
	switch k {
	case "manager", "operation", "apiVersion", "fieldsType", "subresource":
		return true
	}
	return false
}

// setFieldsV1 sets e.FieldsV1 to the JSON of v, as encoding/json encodes it.
func setFieldsV1(e *metav1.ManagedFieldsEntry, v interface{}) bool {
	m, ok := v.(map[string]interface{})
	if !ok {
		return false
	}
	b, err := objectjson.Marshal(m)
	if err != nil {
		return false
	}
	if bytes.ContainsAny(b, "<>&\u2028\u2029") {
		// encoding/json escapes these where objectjson does not.
		if b, err = json.Marshal(m); err != nil {
			return false
		}
	}
	e.FieldsV1 = metav1.NewFieldsV1(string(b))
	return true
}

// ToUnstructured returns obj, a pointer to a Go type, as
// runtime.DefaultUnstructuredConverter.ToUnstructured returns it. obj is not changed.
func ToUnstructured(obj runtime.Object) (map[string]interface{}, error) {
	accessor, err := apimeta.Accessor(obj)
	if err != nil || len(accessor.GetManagedFields()) == 0 {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	entries, ok := unstructuredEntries(accessor.GetManagedFields())
	if !ok {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	// A shallow copy without the entries: the rest is shared, and only read.
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	shallow := reflect.New(v.Elem().Type())
	shallow.Elem().Set(v.Elem())
	rest, ok := shallow.Interface().(runtime.Object)
	if !ok {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	restAccessor, err := apimeta.Accessor(rest)
	if err != nil {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	restAccessor.SetManagedFields(nil)
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rest)
	if err != nil {
		return nil, err
	}
	meta, ok := out["metadata"].(map[string]interface{})
	if !ok {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	meta["managedFields"] = entries
	return out, nil
}

// unstructuredEntries returns entries as the generic converter writes them, or false
// where one holds what it writes otherwise: a zero time, fieldsV1 that is not a JSON
// object of objects.
func unstructuredEntries(entries []metav1.ManagedFieldsEntry) ([]interface{}, bool) {
	out := make([]interface{}, len(entries))
	for i, e := range entries {
		m := make(map[string]interface{}, 7)
		setString(m, "manager", e.Manager)
		setString(m, "operation", string(e.Operation))
		setString(m, "apiVersion", e.APIVersion)
		setString(m, "fieldsType", e.FieldsType)
		setString(m, "subresource", e.Subresource)
		if e.Time != nil {
			if e.Time.IsZero() {
				return nil, false
			}
			m["time"] = e.Time.UTC().Format(time.RFC3339)
		}
		if e.FieldsV1 != nil {
			fields, ok := objectOfObjects(e.FieldsV1.GetRawBytes())
			if !ok {
				return nil, false
			}
			m["fieldsV1"] = fields
		}
		out[i] = m
	}
	return out, true
}

// setString sets m[k] to a string that is not empty (the fields are omitempty).
func setString(m map[string]interface{}, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// objectOfObjects parses raw, if it is a JSON object whose values are all objects, at
// every depth: a managed fields set as servers write it.
func objectOfObjects(raw []byte) (map[string]interface{}, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	m, err := objectjson.UnmarshalObject(raw)
	if err != nil || !onlyObjects(m) {
		return nil, false
	}
	return m, true
}

func onlyObjects(m map[string]interface{}) bool {
	for _, v := range m {
		child, ok := v.(map[string]interface{})
		if !ok || !onlyObjects(child) {
			return false
		}
	}
	return true
}
