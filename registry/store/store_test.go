package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func newStore(t *testing.T) *store.Store {
	t.Helper()
	return store.NewStore(storage.New(etcdtest.Start(t), "/registry"))
}

// widgets is a cluster-scoped resource with versions v1 and v2, stored in storage.
func widgets(t *testing.T, storageVersion string, versions ...string) *registry.Resource {
	t.Helper()
	if len(versions) == 0 {
		versions = []string{"v1", "v2"}
	}
	res := &registry.Resource{
		Group:          "example.com",
		Names:          apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
		StorageVersion: storageVersion,
	}
	for _, v := range versions {
		res.Versions = append(res.Versions, registry.Version{Name: v, Served: true})
	}
	if err := res.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	return res
}

func widget(version, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/" + version, "kind": "Widget",
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"size": int64(3)},
	}}
}

func storedAPIVersion(t *testing.T, s *store.Store, res *registry.Resource, name string) string {
	t.Helper()
	kv, err := s.GetRaw(t.Context(), store.Ref{Resource: res, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Metadata   map[string]interface{}
	}
	if err := json.Unmarshal(kv.Value, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Metadata["resourceVersion"]; ok {
		t.Fatalf("resourceVersion was stored: %s", kv.Value)
	}
	return m.APIVersion
}

func TestStorageVersionDrivesEncoding(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	v1 := widgets(t, "v1")

	// Written through v2, stored as v1.
	created, err := s.Create(ctx, store.Ref{Resource: v1, Version: "v2"}, widget("v2", "a"), store.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetAPIVersion() != "example.com/v2" {
		t.Fatalf("create answered in %s, want the request's v2", created.GetAPIVersion())
	}
	if got := storedAPIVersion(t, s, v1, "a"); got != "example.com/v1" {
		t.Fatalf("stored as %s, want the storage version v1", got)
	}
	// Read in either version.
	for _, v := range []string{"v1", "v2"} {
		obj, err := s.Get(ctx, store.Ref{Resource: v1, Version: v, Name: "a"}, metav1.GetOptions{})
		if err != nil || obj.GetAPIVersion() != "example.com/"+v {
			t.Fatalf("get as %s: %v %v", v, obj, err)
		}
	}

	// The storage version flips to v2: old objects still read, new writes are v2, and
	// an update that changes nothing still re-encodes nothing... unless the encoding
	// differs, which it does here, so it is written in v2.
	v2 := widgets(t, "v2")
	if got := storedAPIVersion(t, s, v2, "a"); got != "example.com/v1" {
		t.Fatalf("flip rewrote data: %s", got)
	}
	if _, err := s.Create(ctx, store.Ref{Resource: v2, Version: "v1"}, widget("v1", "b"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := storedAPIVersion(t, s, v2, "b"); got != "example.com/v2" {
		t.Fatalf("new object stored as %s, want v2", got)
	}
	before, err := s.Get(ctx, store.Ref{Resource: v2, Version: "v2", Name: "a"}, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	identity := func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return cur, nil
	}
	after, _, err := s.Update(ctx, store.Ref{Resource: v2, Version: "v2", Name: "a"}, identity, store.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() == before.GetResourceVersion() {
		t.Fatal("an unchanged object stored in an old version was not re-encoded")
	}
	if got := storedAPIVersion(t, s, v2, "a"); got != "example.com/v2" {
		t.Fatalf("rewrite stored %s, want v2", got)
	}
	// Now the encoding is current: the same no-op update writes nothing.
	again, _, err := s.Update(ctx, store.Ref{Resource: v2, Version: "v1", Name: "a"}, identity, store.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.GetResourceVersion() != after.GetResourceVersion() {
		t.Fatalf("no-op update wrote: %s -> %s", after.GetResourceVersion(), again.GetResourceVersion())
	}
}

func TestUndecodableVersionIsAClearInternalError(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	newer := widgets(t, "v3", "v1", "v2", "v3")
	if _, err := s.Create(ctx, store.Ref{Resource: newer, Version: "v3"}, widget("v3", "from-the-future"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	older := widgets(t, "v2")
	_, err := s.Get(ctx, store.Ref{Resource: older, Version: "v2", Name: "from-the-future"}, metav1.GetOptions{})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("got %v, want a 500", err)
	}
	msg := err.Error()
	for _, want := range []string{"example.com/v3", "example.com/v2, example.com/v1"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q does not name %q", msg, want)
		}
	}
	// A list fails rather than dropping the object, and names every object it could
	// not read by its etcd key (Kubernetes' StorageReadError).
	if _, err := s.Create(ctx, store.Ref{Resource: newer, Version: "v3"}, widget("v3", "also-from-the-future"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, store.Ref{Resource: older, Version: "v2"}, widget("v2", "readable"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.List(ctx, store.Ref{Resource: older, Version: "v2"}, metav1.ListOptions{})
	var st apierrors.APIStatus
	if !apierrors.IsStoreReadError(err) || !errors.As(err, &st) || st.Status().Code != 500 {
		t.Fatalf("list: got %v, want a 500 StorageReadError", err)
	}
	details := st.Status().Details
	if details == nil || len(details.Causes) != 2 || details.Group != "example.com" || details.Kind != "widgets" {
		t.Fatalf("list: details %+v, want the two unreadable widgets", details)
	}
	for i, name := range []string{"also-from-the-future", "from-the-future"} {
		c := details.Causes[i]
		if c.Type != metav1.CauseTypeUnexpectedServerResponse || !strings.HasSuffix(c.Field, "/example.com/widgets/"+name) ||
			!strings.Contains(c.Message, "example.com/v3") {
			t.Errorf("cause %d = %+v, want %s's key and stored version", i, c, name)
		}
	}
	if msg := st.Status().Message; !strings.Contains(msg, "2 stored widgets.example.com could not be read") {
		t.Errorf("list: message %q does not say how many objects could not be read", msg)
	}
}

func TestDefaultsApplyOnRead(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	old := widgets(t, "v1")
	if _, err := s.Create(ctx, store.Ref{Resource: old, Version: "v1"}, widget("v1", "plain"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A later definition adds a default: objects stored before read with it.
	withDefault := &registry.Resource{Group: old.Group, Names: old.Names, StorageVersion: "v1", Versions: []registry.Version{{
		Name: "v1", Served: true,
		Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"size":  {Type: "integer"},
				"color": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"blue"`)}},
			}},
		}},
	}}}
	if err := withDefault.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, store.Ref{Resource: withDefault, Version: "v1", Name: "plain"}, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if color, _, _ := unstructured.NestedString(got.Object, "spec", "color"); color != "blue" {
		t.Fatalf("get: spec.color = %q, want the default", color)
	}
	list, err := s.List(ctx, store.Ref{Resource: withDefault, Version: "v1"}, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if color, _, _ := unstructured.NestedString(list.Items[0].Object, "spec", "color"); color != "blue" {
		t.Fatalf("list: spec.color = %q, want the default", color)
	}
}
