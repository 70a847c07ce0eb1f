package migration

import (
	"testing"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
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

// While the follower settles after deleting its definition, a definition whose cleanup
// by kube-apiserver stands failed is touched, at most once per cleanupNudge, so that
// kube-apiserver's finalizer looks at it again; one whose cleanup is under way is left
// alone.
func TestSettlingAsksForCleanupAgain(t *testing.T) {
	now := metav1.Now()
	definition := func(name, reason string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), DeletionTimestamp: &now,
				Finalizers: []string{apiextensionsv1.CustomResourceCleanupFinalizer}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: reason}}},
		}
	}
	keep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": migrationAPIServiceName()},
	}}
	for _, tc := range []struct {
		reason string
		nudged bool
	}{
		{"InstanceDeletionFailed", true},
		{"InstanceDeletionInProgress", false},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			crds := apiextensionsfake.NewSimpleClientset(definition("stuck", tc.reason))
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{migrationapi.APIServices: "APIServiceList"}, keep.DeepCopy())
			f := &follower{crds: crds, dyn: dyn}
			s := &settling{crd: "stuck", keep: keep, deadline: time.Now().Add(time.Minute)}
			for range 3 {
				if done, err := s.step(t.Context(), f); err != nil || done {
					t.Fatalf("step: done=%v, %v; want the settling to go on", done, err)
				}
			}
			patches := 0
			for _, a := range crds.Actions() {
				if a.GetVerb() == "patch" {
					patches++
				}
			}
			got, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "stuck", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, annotated := got.Annotations[annotationCleanupRequested]
			if want := map[bool]int{true: 1, false: 0}[tc.nudged]; patches != want || annotated != tc.nudged {
				t.Errorf("%d patches, annotated %v; want %d and %v", patches, annotated, want, tc.nudged)
			}
		})
	}
}

// The APIService a follower read before deleting its definition outlives its term of
// leadership: kube-apiserver removes the APIService after that term has ended, and the
// next term's follower, whose probe finds no StorageVersionMigration API served,
// puts it back instead of installing the definition again (once).
func TestNextTermRestoresTheBuiltInAPIService(t *testing.T) {
	registered := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.storagemigration.k8s.io"},
		"spec":     map[string]any{"group": "storagemigration.k8s.io", "version": "v1", "groupPriorityMinimum": int64(800), "versionPriority": int64(15)},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{migrationapi.APIServices: "APIServiceList"}, registered)
	ctx := t.Context()
	kept := &keptAPIService{}
	// The first term read it before deleting the definition that shadowed it (serve),
	// then lost its leadership.
	keep, err := builtInAPIService(ctx, dyn)
	if err != nil || keep == nil {
		t.Fatalf("builtInAPIService: %v, %v", keep, err)
	}
	kept.service = keep
	// kube-apiserver removes it afterwards.
	if err := dyn.Resource(migrationapi.APIServices).Delete(ctx, keep.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	crds := apiextensionsfake.NewClientset()
	next := &follower{disc: &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}, crds: crds, dyn: dyn, kept: kept}
	api, err := next.serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(migrationapi.APIServices).Get(ctx, keep.GetName(), metav1.GetOptions{}); err != nil {
		t.Fatalf("the next term did not put the APIService back (probe: %q): %v", api, err)
	}
	if list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Fatalf("the next term installed a definition: %v, %v", list, err)
	}
	if kept.service != nil {
		t.Fatal("the kept APIService is still kept after it was put back: it is put back once")
	}
}
