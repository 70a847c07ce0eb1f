package apiextensions

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/registry/store"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestCreateDefaultsStatusAndDeletionFinalizer: a definition is created with its
// defaults, a reset status and no finalizer; its deletion adds the cleanup finalizer
// (as kube's apiextensions-apiserver does), which keeps it.
func TestCreateDefaultsStatusAndDeletionFinalizer(t *testing.T) {
	reg, st := newRegistry(t, newStorage(t))
	res := reg.Get(GroupResource)
	in := toUnstructured(t, widgetsCRD())
	in.Object["status"] = map[string]interface{}{"storedVersions": []interface{}{"v9"}}
	in.Object["spec"].(map[string]interface{})["notAField"] = true
	out, err := st.Create(t.Context(), store.Ref{Resource: res, Version: "v1"}, in, store.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found := out.Object["spec"].(map[string]interface{})["notAField"]; found {
		t.Errorf("a field the v1 types do not have was kept")
	}
	crd := fromStore(t, out)
	if crd.Spec.Names.Singular != "widget" || crd.Spec.Names.ListKind != "WidgetList" || crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("defaults not applied: names %+v, conversion %+v", crd.Spec.Names, crd.Spec.Conversion)
	}
	if !slices.Equal(crd.Status.StoredVersions, []string{"v1"}) || len(crd.Status.Conditions) != 0 {
		t.Errorf("status = %+v, want storedVersions [v1] and nothing else", crd.Status)
	}
	if len(crd.Finalizers) != 0 {
		t.Errorf("finalizers at creation = %v, want none", crd.Finalizers)
	}
	deleting, deleted, err := st.Delete(t.Context(), store.Ref{Resource: res, Version: "v1", Name: crd.Name}, store.DeleteOptions{})
	if err != nil || deleted {
		t.Fatalf("delete: deleted %v, %v; want kept by its finalizer", deleted, err)
	}
	if !slices.Equal(deleting.GetFinalizers(), []string{FinalizerCleanup}) || deleting.GetDeletionTimestamp() == nil {
		t.Errorf("deleting: finalizers %v, deletionTimestamp %v; want the cleanup finalizer and a timestamp", deleting.GetFinalizers(), deleting.GetDeletionTimestamp())
	}
	// Written as kube's apiextensions-apiserver writes it: no grace period, the same
	// generation, the Terminating condition.
	gone := fromStore(t, deleting)
	if deleting.GetDeletionGracePeriodSeconds() != nil || deleting.GetGeneration() != out.GetGeneration() ||
		!isTerminating(gone, reasonDeletionPending) {
		t.Errorf("deleting: grace %v, generation %d (was %d), conditions %+v", deleting.GetDeletionGracePeriodSeconds(),
			deleting.GetGeneration(), out.GetGeneration(), gone.Status.Conditions)
	}
}

func TestStoredVersions(t *testing.T) {
	ctx := t.Context()
	reg, st := newRegistry(t, newStorage(t))
	res := reg.Get(GroupResource)
	if _, err := st.Create(ctx, store.Ref{Resource: res, Version: "v1"}, toUnstructured(t, widgetsCRD()), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	update := func(sub string, mutate func(*apiextensionsv1.CustomResourceDefinition)) (*apiextensionsv1.CustomResourceDefinition, error) {
		out, _, err := st.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: "widgets.example.com"}, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			crd := fromStore(t, cur)
			mutate(crd)
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
			return &unstructured.Unstructured{Object: m}, err
		}, store.UpdateOptions{WriteOptions: store.WriteOptions{Subresource: sub}})
		if err != nil {
			return nil, err
		}
		return fromStore(t, out), nil
	}
	flip := func(storage string) func(*apiextensionsv1.CustomResourceDefinition) {
		return func(c *apiextensionsv1.CustomResourceDefinition) {
			for i := range c.Spec.Versions {
				c.Spec.Versions[i].Storage = c.Spec.Versions[i].Name == storage
			}
		}
	}
	steps := []struct {
		name    string
		sub     string
		mutate  func(*apiextensionsv1.CustomResourceDefinition)
		want    []string
		invalid string
	}{
		{"main update cannot touch status", "", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Status.StoredVersions = []string{"v2"}
		}, []string{"v1"}, ""},
		{"storage flip appends", "", flip("v2"), []string{"v1", "v2"}, ""},
		{"flip back does not duplicate", "", flip("v1"), []string{"v1", "v2"}, ""},
		{"unrelated spec change", "", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[1].Deprecated = true
		}, []string{"v1", "v2"}, ""},
		{"status update may not drop the storage version", "status", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Status.StoredVersions = []string{"v2"}
		}, nil, "must have the storage version v1"},
		{"status update may drop others", "status", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Status.StoredVersions = []string{"v1"}
		}, []string{"v1"}, ""},
		{"status update cannot change the spec", "status", flip("v2"), []string{"v1"}, ""},
		{"a stored version must stay in spec.versions", "", func(c *apiextensionsv1.CustomResourceDefinition) {
			flip("v2")(c)
			c.Spec.Versions = c.Spec.Versions[1:]
		}, nil, "missing from spec.versions"},
	}
	for _, step := range steps {
		got, err := update(step.sub, step.mutate)
		if step.invalid != "" {
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), step.invalid) {
				t.Fatalf("%s: got %v, want Invalid ...%s...", step.name, err, step.invalid)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !slices.Equal(got.Status.StoredVersions, step.want) {
			t.Fatalf("%s: storedVersions = %v, want %v", step.name, got.Status.StoredVersions, step.want)
		}
	}
}

func TestValidation(t *testing.T) {
	reg, st := newRegistry(t, newStorage(t))
	res := reg.Get(GroupResource)
	for _, tc := range []struct {
		name         string
		mutate       func(*apiextensionsv1.CustomResourceDefinition)
		field, cause string
	}{
		{"name", func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "gadgets.example.com" },
			"metadata.name", `must be spec.names.plural+"."+spec.group`},
		{"group", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Group = "example"
			c.Name = "widgets.example"
		},
			"spec.group", "should be a domain with at least one dot"},
		{"scope", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = "Galaxy" },
			"spec.scope", "Unsupported value"},
		{"no storage version", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Storage = false },
			"spec.versions", "must have exactly one version marked as storage version"},
		{"non-structural", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}},
			}
		}, "spec.versions[0].schema.openAPIV3Schema.properties[spec].type", "must not be empty for specified object fields"},
		{"status path of scale", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath: ".status.size", StatusReplicasPath: ".status.replicas"}}
		}, "spec.versions[0].subresources.scale.specReplicasPath", "should be a json path under .spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := widgetsCRD()
			tc.mutate(crd)
			_, err := st.Create(t.Context(), store.Ref{Resource: res, Version: "v1"}, toUnstructured(t, crd), store.WriteOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want Invalid", err)
			}
			found := false
			for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
				found = found || c.Field == tc.field && strings.Contains(c.Message, tc.cause)
			}
			if !found {
				t.Errorf("causes %+v, want %s: ...%s...", err.(apierrors.APIStatus).Status().Details.Causes, tc.field, tc.cause)
			}
		})
	}
	// A valid definition passes, and a second one cannot take the same name.
	if _, err := st.Create(t.Context(), store.Ref{Resource: res, Version: "v1"}, toUnstructured(t, widgetsCRD()), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(t.Context(), store.Ref{Resource: res, Version: "v1"}, toUnstructured(t, widgetsCRD()), store.WriteOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v", err)
	}
}
