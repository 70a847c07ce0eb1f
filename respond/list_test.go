package respond

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/watch"
)

// A list answered from its items' encodings is byte for byte the list encoded whole,
// in JSON and in protobuf, with items past the size of the writer's buffer, and its
// Content-Length is its size.
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
			"data": map[string]interface{}{"k": "v", "n": fmt.Sprint(i), "big": strings.Repeat("x", i*40<<10)},
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
		got := answer(t, n, l)
		if n.Protobuf && !bytes.Equal(got, want) || !n.Protobuf && !jsonEqual(t, got, want) {
			t.Fatalf("protobuf %v:\nassembled %q\nwhole     %q", n.Protobuf, got, want)
		}
	}
}

// answer is the body List answers l with, checked against its Content-Length.
func answer(t *testing.T, n Negotiation, l *EncodedList) []byte {
	t.Helper()
	w := httptest.NewRecorder()
	List(w, httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil), n, l)
	if w.Code != http.StatusOK {
		t.Fatalf("code %d: %s", w.Code, w.Body)
	}
	if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(w.Body.Len()) {
		t.Fatalf("Content-Length %s for a body of %d bytes", cl, w.Body.Len())
	}
	return w.Body.Bytes()
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

// A CBOR list assembled from its items' CBOR decodes, with apimachinery's CBOR
// serializer (client-go's), to the list encoded whole; a CBOR watch event to the
// metav1.WatchEvent of its object.
func TestCBORListAndEventDecode(t *testing.T) {
	whole := &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "GadgetList"}}
	whole.SetResourceVersion("42")
	whole.SetContinue("token")
	for i := range 30 { // more than 23 items: a longer array head
		whole.Items = append(whole.Items, unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Gadget",
			"metadata": map[string]interface{}{"name": fmt.Sprint("g-", i), "namespace": "default", "resourceVersion": fmt.Sprint(40 + i)},
			"spec":     map[string]interface{}{"replicas": int64(i), "ratio": 0.5, "text": string(bytes.Repeat([]byte("x"), 300*i))},
		}})
	}
	l := &EncodedList{APIVersion: "example.com/v1", Kind: "GadgetList", Meta: listMetaOf(whole)}
	for i := range whole.Items {
		b, err := EncodeItem(Negotiation{CBOR: true}, &whole.Items[i])
		if err != nil {
			t.Fatal(err)
		}
		l.Items = append(l.Items, b)
	}
	data := answer(t, Negotiation{CBOR: true}, l)
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	s := cbor.NewSerializer(scheme, scheme)
	got := &unstructured.UnstructuredList{}
	if _, _, err := s.Decode(data, nil, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, whole) {
		t.Fatalf("decoded\n%v\nwant\n%v", got, whole)
	}

	obj, err := EncodeCBOR(&whole.Items[3])
	if err != nil {
		t.Fatal(err)
	}
	// client-go's watch decoder keeps the event's object in CBOR (no transcoding).
	stream := cbor.NewSerializer(scheme, scheme, cbor.Transcode(false))
	var ev metav1.WatchEvent
	if _, _, err := stream.Decode(AppendCBORWatchEvent(nil, string(watch.Added), obj), nil, &ev); err != nil {
		t.Fatal(err)
	}
	item := &unstructured.Unstructured{}
	if _, _, err := s.Decode(ev.Object.Raw, nil, item); err != nil {
		t.Fatal(err)
	}
	if ev.Type != string(watch.Added) || !reflect.DeepEqual(item, &whole.Items[3]) {
		t.Fatalf("event %s %v, want ADDED %v", ev.Type, item, whole.Items[3])
	}
}
