package typedconv_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/concordproject/concord/objectjson"
	"github.com/concordproject/concord/typedconv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// same converts the JSON object doc with typedconv and with the generic converter,
// and fails unless both give the same object or both fail.
func same(t *testing.T, doc string) {
	t.Helper()
	content, err := objectjson.UnmarshalObject([]byte(doc))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	fast, generic := &corev1.ConfigMap{}, &corev1.ConfigMap{}
	errFast := typedconv.FromUnstructured(content, fast)
	errGeneric := runtime.DefaultUnstructuredConverter.FromUnstructured(content, generic)
	if (errFast == nil) != (errGeneric == nil) {
		t.Fatalf("%s: error %v, the generic converter's %v", doc, errFast, errGeneric)
	}
	if errFast == nil && !reflect.DeepEqual(fast, generic) {
		t.Errorf("%s:\n got %#v\nwant %#v", doc, fast.ManagedFields, generic.ManagedFields)
	}
}

// TestFromUnstructured holds typedconv to the generic converter on managed fields as
// servers write them and on every shape it must leave to the generic converter.
func TestFromUnstructured(t *testing.T) {
	for _, doc := range []string{
		`{"metadata":{"name":"a"},"data":{"k":"v"}}`,
		`{"metadata":{"name":"a","managedFields":[]}}`,
		`{"metadata":{"name":"a","creationTimestamp":"2026-11-25T10:00:00Z","managedFields":[
			{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2026-11-25T10:00:00Z","fieldsType":"FieldsV1",
			 "fieldsV1":{"f:data":{"f:k":{}},"f:metadata":{"f:labels":{"f:x":{},".":{}}}}},
			{"manager":"ctl","operation":"Update","apiVersion":"v1","time":"2026-11-25T11:00:00+02:00","fieldsType":"FieldsV1",
			 "fieldsV1":{"f:data":{"f:<b>&c":{}}},"subresource":"status"}]},"data":{"k":"v"}}`,
		`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"k:{\"name\":\"x\u2028\"}":{}}}]}}`,
		`{"metadata":{"managedFields":[{"manager":null,"operation":null,"time":null,"fieldsV1":null}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","time":"yesterday"}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","time":1}]}}`,
		`{"metadata":{"managedFields":[{"manager":5}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","unknown":"x"}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":"f:x"}]}}`,
		`{"metadata":{"managedFields":["x"]}}`,
		`{"metadata":{"managedFields":[{"manager":"m"}]},"data":{"k":5}}`,
		`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{"f:n":1.5}}}]}}`,
	} {
		same(t, doc)
	}
}

// FuzzFromUnstructured: on any JSON object, typedconv and the generic converter agree.
func FuzzFromUnstructured(f *testing.F) {
	f.Add(`{"metadata":{"managedFields":[{"manager":"m","operation":"Apply","time":"2026-11-25T10:00:00Z","fieldsV1":{"f:a":{}}}]}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		if _, err := objectjson.UnmarshalObject([]byte(doc)); err != nil {
			return
		}
		same(t, doc)
	})
}

// back converts doc to a ConfigMap with the generic converter, and that back with
// typedconv and with the generic converter, and fails unless both agree.
func back(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	before := cm.DeepCopy()
	fast, errFast := typedconv.ToUnstructured(cm)
	generic, errGeneric := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
	if (errFast == nil) != (errGeneric == nil) {
		t.Fatalf("%#v: error %v, the generic converter's %v", cm.ManagedFields, errFast, errGeneric)
	}
	if errFast == nil && !reflect.DeepEqual(fast, generic) {
		t.Errorf("got %#v\nwant %#v", fast, generic)
	}
	if !reflect.DeepEqual(cm, before) {
		t.Errorf("ToUnstructured changed its object")
	}
}

// TestToUnstructured holds typedconv to the generic converter on managed fields as
// servers write them and on what it must leave to the generic converter.
func TestToUnstructured(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.FixedZone("x", 3600)))
	for _, entries := range [][]metav1.ManagedFieldsEntry{
		nil,
		{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:<x>":{}}}}`)},
			{Manager: "ctl", Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{}`)}},
		{{Manager: "m", Time: &metav1.Time{}}},
		{{Manager: "m", FieldsV1: &metav1.FieldsV1{}}},
		{{Manager: "m", FieldsV1: metav1.NewFieldsV1(`{"f:a":1}`)}},
		{{Manager: "m", FieldsV1: metav1.NewFieldsV1(`{"f:a":{}} x`)}},
		{{Manager: "m", FieldsV1: metav1.NewFieldsV1(` {"f:a":{}}`)}},
		{{Manager: "m", FieldsV1: metav1.NewFieldsV1(`[]`)}},
		{{}},
	} {
		back(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: entries, CreationTimestamp: now}, Data: map[string]string{"k": "v"}})
	}
}

// FuzzToUnstructured: on any object the generic converter reads, typedconv and the
// generic converter write it back alike.
func FuzzToUnstructured(f *testing.F) {
	f.Add(`{"metadata":{"managedFields":[{"manager":"m","operation":"Apply","time":"2026-11-25T10:00:00Z","fieldsV1":{"f:a":{}}}]}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		content, err := objectjson.UnmarshalObject([]byte(doc))
		if err != nil {
			return
		}
		cm := &corev1.ConfigMap{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(content, cm) != nil {
			return
		}
		back(t, cm)
	})
}

// TestManagedFields: the entries of an object's content, as unstructured's
// GetManagedFields reads them, on entries it reads and on those it refuses.
func TestManagedFields(t *testing.T) {
	for _, doc := range []string{
		`{"metadata":{"name":"a"}}`,
		`{"metadata":{"managedFields":[{"manager":"m","operation":"Apply","time":"2026-11-25T10:00:00Z","fieldsV1":{"f:a":{}}}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","time":"yesterday"}]}}`,
		`{"metadata":{"managedFields":[{"manager":5}]}}`,
		`{"metadata":{"managedFields":"x"}}`,
	} {
		content, err := objectjson.UnmarshalObject([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		got, want := typedconv.ManagedFields(content), (&unstructured.Unstructured{Object: content}).GetManagedFields()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", doc, got, want)
		}
	}
}
