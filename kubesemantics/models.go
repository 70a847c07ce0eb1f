package kubesemantics

import (
	"reflect"
	"sync"

	"github.com/concordproject/concord/openapi"
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"
)

// goDefinitions describe every built-in kind as kube-apiserver publishes it in its
// OpenAPI documents: kube's generated definitions, named after the Go types of kube's
// scheme.
var goDefinitions = &registry.GoDefinitions{Definitions: generatedopenapi.GetOpenAPIDefinitions, Scheme: legacyscheme.Scheme}

// typeConverter is server-side apply's type converter of every built-in kind, built
// from kube's generated OpenAPI definitions (pkg/generated/openapi), as kube-apiserver
// builds its own: the list-map keys, the atomic and granular structs and maps, and so
// the managed fields kube records. Built once, on first use.
var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	defs := generatedopenapi.GetOpenAPIDefinitions(func(path string) spec.Ref { return spec.MustCreateRef("#/components/schemas/" + path) })
	var names []string
	for gvk, t := range legacyscheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || t.Kind() != reflect.Struct {
			continue
		}
		named, ok := reflect.New(t).Interface().(interface{ OpenAPIModelName() string })
		if !ok {
			continue
		}
		if _, ok := defs[named.OpenAPIModelName()]; ok {
			names = append(names, named.OpenAPIModelName())
		}
	}
	return openapi.GoTypeConverter(legacyscheme.Scheme, generatedopenapi.GetOpenAPIDefinitions, names...)
})
