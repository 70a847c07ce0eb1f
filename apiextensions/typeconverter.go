package apiextensions

import (
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
)

// typeConverter is server-side apply's type converter of CustomResourceDefinitions,
// built from apiextensions-apiserver's generated OpenAPI definitions, as
// kube-apiserver builds its own: the managed fields of an apply are those kube
// records (a definition's spec is a struct, its versions a list-map keyed by name).
// Built once, on first use.
var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		GetDefinitionName: openapinamer.NewDefinitionNamer(scheme).GetDefinitionName,
		GetDefinitions:    generatedopenapi.GetOpenAPIDefinitions,
	}, apiextensionsv1.CustomResourceDefinition{}.OpenAPIModelName())
	if err != nil {
		return nil, fmt.Errorf("apiextensions-apiserver's OpenAPI definitions: %w", err)
	}
	return managedfields.NewTypeConverter(schemas, false)
})
