package apiextensions

import (
	"testing"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// newStorage starts an embedded etcd for the test and returns a raw store on it.
func newStorage(t *testing.T) *storage.Store {
	t.Helper()
	return storage.New(etcdtest.Start(t), "/registry")
}

// newRegistry returns a registry holding only the CRD resource, and a store over st.
func newRegistry(t *testing.T, st *storage.Store) (*registry.Registry, *store.Store) {
	t.Helper()
	reg := registry.New()
	if err := reg.Put(t.Context(), Resource()); err != nil {
		t.Fatal(err)
	}
	return reg, store.NewStore(st)
}

// widgetsCRD is a cluster-scoped definition of example.com widgets with versions v1
// (storage) and v2 and a small structural schema.
func widgetsCRD() *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"size": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
			}},
		},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ShortNames: []string{"wd"}, Categories: []string{"all"}},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Schema: schema.DeepCopy()},
			},
		},
	}
}

func toUnstructured(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	// A new object carries no creationTimestamp; the store sets it.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u
}

func fromStore(t *testing.T, u *unstructured.Unstructured) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return crd
}
