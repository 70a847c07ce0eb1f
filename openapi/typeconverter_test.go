package openapi

import (
	"strings"
	"testing"

	"github.com/concordproject/concord/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"
)

func typeConverter(t *testing.T, res *registry.Resource) managedfields.TypeConverter {
	t.Helper()
	reg := registry.New()
	put(t, reg, res)
	tc, err := TypeConverter(res)
	if err != nil {
		t.Fatalf("TypeConverter(%s): %v", res.GroupResource(), err)
	}
	return tc
}

func cronTab(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stable.example.com/v1",
		"kind":       "CronTab",
		"metadata":   map[string]any{"name": "nightly", "namespace": "default"},
		"spec":       spec,
	}}
}

// owners returns, for each manager, whether its managed fields mention each of keys.
func owners(t *testing.T, fm managedfieldstest.TestFieldManager, keys ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range fm.ManagedFields() {
		for _, k := range keys {
			if e.FieldsV1 != nil && strings.Contains(e.FieldsV1.GetRawString(), k) {
				out[e.Manager] = append(out[e.Manager], k)
			}
		}
	}
	return out
}

func TestTypeConverterMergesListMapItems(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}
	tc := typeConverter(t, cronTabs(t))
	fm := managedfieldstest.NewTestFieldManager(tc, gvk)

	if err := fm.Apply(cronTab(map[string]any{"cronSpec": "0 0 * * *", "image": "backup", "ports": []any{map[string]any{"name": "http", "port": int64(80)}}}), "alice", false); err != nil {
		t.Fatalf("alice applies: %v", err)
	}
	if err := fm.Apply(cronTab(map[string]any{"ports": []any{map[string]any{"name": "metrics", "port": int64(9090)}}}), "bob", false); err != nil {
		t.Fatalf("bob applies another item of the list-map: %v", err)
	}
	live := fm.Live().(*unstructured.Unstructured)
	ports, _, _ := unstructured.NestedSlice(live.Object, "spec", "ports")
	if len(ports) != 2 {
		t.Errorf("spec.ports = %v, want both items", ports)
	}
	got := owners(t, fm, `k:{\"name\":\"http\"}`, `k:{\"name\":\"metrics\"}`)
	if len(got["alice"]) != 1 || !strings.Contains(got["alice"][0], "http") || len(got["bob"]) != 1 || !strings.Contains(got["bob"][0], "metrics") {
		t.Errorf("ownership of spec.ports items = %v, want alice the http item and bob the metrics item", got)
	}

	// Alice applying again without her item gives it up, and leaves Bob's alone.
	if err := fm.Apply(cronTab(map[string]any{"cronSpec": "0 0 * * *", "image": "backup"}), "alice", false); err != nil {
		t.Fatalf("alice applies again: %v", err)
	}
	ports, _, _ = unstructured.NestedSlice(fm.Live().(*unstructured.Unstructured).Object, "spec", "ports")
	if len(ports) != 1 || ports[0].(map[string]any)["name"] != "metrics" {
		t.Errorf("spec.ports = %v, want only bob's item", ports)
	}

	// Without the schema the list is atomic, and the second apply conflicts: the schema is
	// what makes the merge granular.
	deduced := managedfieldstest.NewTestFieldManager(managedfields.NewDeducedTypeConverter(), gvk)
	if err := deduced.Apply(cronTab(map[string]any{"ports": []any{map[string]any{"name": "http"}}}), "alice", false); err != nil {
		t.Fatal(err)
	}
	if err := deduced.Apply(cronTab(map[string]any{"ports": []any{map[string]any{"name": "metrics"}}}), "bob", false); !apierrors.IsConflict(err) {
		t.Errorf("deduced types: bob's apply = %v, want a conflict", err)
	}
}

func TestTypeConverterChecksTypes(t *testing.T) {
	fm := managedfieldstest.NewTestFieldManager(typeConverter(t, cronTabs(t)), schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"})
	err := fm.Apply(cronTab(map[string]any{"replicas": "three"}), "alice", false)
	if err == nil {
		t.Fatal("applying a string to an integer field succeeded")
	}
	if !strings.Contains(err.Error(), "replicas") {
		t.Errorf("applying a string to an integer field: %v, want an error naming spec.replicas", err)
	}
	// Fields preserving unknown fields take anything.
	if err := fm.Apply(cronTab(map[string]any{"extra": map[string]any{"known": "k", "unknown": map[string]any{"deep": []any{int64(1)}}}}), "alice", false); err != nil {
		t.Errorf("applying unknown fields under x-kubernetes-preserve-unknown-fields: %v", err)
	}
}

func TestTypeConverterNoSchema(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "free.example.com", Version: "v1", Kind: "Blob"}
	fm := managedfieldstest.NewTestFieldManager(typeConverter(t, blobs()), gvk)
	blob := func(field string, value any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "free.example.com/v1", "kind": "Blob",
			"metadata": map[string]any{"name": "b", "labels": map[string]any{field: "set"}},
			field:      value,
		}}
	}
	if err := fm.Apply(blob("alpha", []any{"x"}), "alice", false); err != nil {
		t.Fatal(err)
	}
	if err := fm.Apply(blob("beta", map[string]any{"y": int64(1)}), "bob", false); err != nil {
		t.Fatal(err)
	}
	live := fm.Live().(*unstructured.Unstructured)
	if live.Object["alpha"] == nil || live.Object["beta"] == nil || len(live.GetLabels()) != 2 {
		t.Errorf("live object %v, want both managers' fields and labels", live.Object)
	}
}

func TestTypeConverterCoversEveryVersion(t *testing.T) {
	res := cronTabs(t)
	tc := typeConverter(t, res)
	for _, tc2 := range []struct {
		apiVersion, kind string
		known            bool
	}{
		{"stable.example.com/v1", "CronTab", true},
		{"stable.example.com/v1beta1", "CronTab", true},
		{"stable.example.com/v1alpha1", "CronTab", true}, // unserved: managed fields may still be recorded in it
		{"autoscaling/v1", "Scale", true},                // CronTab v1 has a scale subresource
		{"stable.example.com/v2", "CronTab", false},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tc2.apiVersion, "kind": tc2.kind, "metadata": map[string]any{"name": "x"}}}
		if _, err := tc.ObjectToTyped(obj); (err == nil) != tc2.known {
			t.Errorf("ObjectToTyped(%s %s) = %v, want known=%v", tc2.apiVersion, tc2.kind, err, tc2.known)
		}
	}

	again, err := TypeConverter(res)
	if err != nil || again != tc {
		t.Errorf("second TypeConverter call = %v, %v; want the cached converter", again, err)
	}
}
