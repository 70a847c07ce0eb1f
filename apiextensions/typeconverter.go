package apiextensions

import (
	"sync"

	"github.com/concordproject/concord/openapi"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// typeConverter is server-side apply's type converter of CustomResourceDefinitions,
// from apiextensions-apiserver's generated OpenAPI definitions: the managed fields of
// a write are those kube records (a definition's spec is a struct, its versions a
// list-map keyed by name). Built once, on first use.
var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return openapi.GoTypeConverter(scheme, generatedopenapi.GetOpenAPIDefinitions, apiextensionsv1.CustomResourceDefinition{}.OpenAPIModelName())
})
