package respond

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A list assembled from its items' encodings is byte for byte the list encoded whole,
// in JSON and in protobuf.
func TestEncodedListIsTheWholeList(t *testing.T) {
	whole := &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMapList"}}
	whole.SetResourceVersion("42")
	whole.SetContinue("token")
	remaining := int64(7)
	whole.SetRemainingItemCount(&remaining)
	for i := range 3 {
		whole.Items = append(whole.Items, unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": fmt.Sprint("cm-", i), "namespace": "default", "resourceVersion": fmt.Sprint(40 + i),
				"labels": map[string]interface{}{"a": "b"}},
			"data": map[string]interface{}{"k": "v", "n": fmt.Sprint(i)},
		}})
	}
	for _, n := range []Negotiation{{}, {Protobuf: true}} {
		_, want, err := encode(n, whole)
		if err != nil {
			t.Fatal(err)
		}
		l := &EncodedList{APIVersion: "v1", Kind: "ConfigMapList", Meta: listMetaOf(whole)}
		for i := range whole.Items {
			b, err := EncodeItem(n, &whole.Items[i])
			if err != nil {
				t.Fatal(err)
			}
			l.Items = append(l.Items, b)
		}
		got, err := jsonList(l)
		if n.Protobuf {
			got, err = protobufList(l)
		}
		if err != nil {
			t.Fatal(err)
		}
		if n.Protobuf && !bytes.Equal(got, want) || !n.Protobuf && !jsonEqual(t, got, want) {
			t.Fatalf("protobuf %v:\nassembled %q\nwhole     %q", n.Protobuf, got, want)
		}
	}
}

func listMetaOf(l *unstructured.UnstructuredList) metav1.ListMeta {
	return metav1.ListMeta{ResourceVersion: l.GetResourceVersion(), Continue: l.GetContinue(), RemainingItemCount: l.GetRemainingItemCount()}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y interface{}
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
