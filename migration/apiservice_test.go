package migration

import (
	"testing"

	migrationapi "github.com/concordproject/concord/migration/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// The built-in API's APIService, as kube-apiserver registers it, is kept with its spec
// and put back, marked as registered at start, once it is gone; an existing one is
// left alone.
func TestRestoreBuiltInAPIService(t *testing.T) {
	registered := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.storagemigration.k8s.io", "resourceVersion": "7", "uid": "u1",
			"labels": map[string]any{automanagedLabel: "true"}},
		"spec":   map[string]any{"group": "storagemigration.k8s.io", "version": "v1", "groupPriorityMinimum": int64(800), "versionPriority": int64(15)},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "True"}}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{migrationapi.APIServices: "APIServiceList"}, registered)
	ctx := t.Context()
	keep, err := builtInAPIService(ctx, dyn)
	if err != nil || keep == nil {
		t.Fatalf("builtInAPIService: %v, %v", keep, err)
	}
	if keep.GetName() != migrationAPIServiceName() || keep.GetLabels()[automanagedLabel] != "onstart" || keep.GetResourceVersion() != "" || keep.Object["status"] != nil {
		t.Errorf("kept %v", keep.Object)
	}
	if restored, err := restoreAPIService(ctx, dyn, keep); err != nil || restored {
		t.Errorf("restoring an APIService that exists: restored=%v, %v", restored, err)
	}
	if err := dyn.Resource(migrationapi.APIServices).Delete(ctx, keep.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if restored, err := restoreAPIService(ctx, dyn, keep); err != nil || !restored {
		t.Fatalf("restoring a missing APIService: restored=%v, %v", restored, err)
	}
	got, err := dyn.Resource(migrationapi.APIServices).Get(ctx, keep.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spec, _, _ := unstructured.NestedMap(got.Object, "spec"); spec["groupPriorityMinimum"] != int64(800) || spec["version"] != "v1" {
		t.Errorf("restored spec %v", spec)
	}
}
