package apiextensions

import (
	"sync"

	"github.com/concordproject/concord/openapi"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// typeConverter is server-side apply's type converter of CustomResourceDefinitions,
// from apiextensions-apiserver's generated OpenAPI definitions: the managed fields of
// a write are those kube records (a definition's spec is a struct, its versions a
// list-map keyed by name). Built once, on first use.
var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	return openapi.GoTypeConverter(goDefinitions.Scheme, generatedopenapi.GetOpenAPIDefinitions, apiextensionsv1.CustomResourceDefinition{}.OpenAPIModelName())
})

// goDefinitions describe CustomResourceDefinitions as kube-apiserver publishes them in
// its OpenAPI documents: apiextensions-apiserver's generated definitions.
var goDefinitions = &registry.GoDefinitions{Definitions: generatedopenapi.GetOpenAPIDefinitions, Scheme: func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	return scheme
}()}
