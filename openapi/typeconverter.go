package openapi

import (
	"errors"
	"fmt"

	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"

	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
)

// ErrTypeConverter is matched by the errors of TypeConverter: the resource's schemas
// cannot be turned into structured-merge-diff types.
var ErrTypeConverter = errors.New("cannot build the server-side apply types")

// typeConverterKey caches a resource's type converter on it.
type typeConverterKey struct{}

// TypeConverter returns the structured-merge-diff type converter server-side apply and
// managed fields use for res: the published v3 models of every version of res, served or
// not (managed fields may be recorded in any of them), over the apimachinery models, and
// autoscaling/v1 Scale if a version has a scale subresource. Lists typed
// x-kubernetes-list-type=map or set and maps typed x-kubernetes-map-type=granular are
// merged item by item; fields under x-kubernetes-preserve-unknown-fields, and whole
// versions without a schema, are tracked as deduced from the objects.
//
// A resource whose Semantics give its types (Kubernetes' own, for built-in resources)
// has theirs. The converter is built once per Resource (a Resource is immutable) and cached on it.
// An error matches ErrTypeConverter.
func TypeConverter(res *registry.Resource) (managedfields.TypeConverter, error) {
	if res.TypeConverter != nil {
		tc, err := res.TypeConverter()
		if err != nil {
			return nil, fmt.Errorf("%w for %s: %w", ErrTypeConverter, res.GroupResource(), err)
		}
		return tc, nil
	}
	tc, err := res.Cached(typeConverterKey{}, func() (any, error) { return buildTypeConverter(res) })
	if err != nil {
		return nil, err
	}
	return tc.(managedfields.TypeConverter), nil
}

func buildTypeConverter(res *registry.Resource) (managedfields.TypeConverter, error) {
	var (
		eps   []*endpoint
		gvs   []schema.GroupVersion
		names []string
		scale bool
	)
	for _, v := range res.Versions {
		m, err := modelsFor(res, v.Name)
		if err != nil {
			return nil, fmt.Errorf("%w for %s: %w", ErrTypeConverter, res.GroupResource(), err)
		}
		eps = append(eps, &endpoint{res: res, models: m})
		gvs = append(gvs, m.gvk.GroupVersion())
		names = append(names, m.kindName)
		scale = scale || m.scale
	}
	if scale {
		names = append(names, scaleModel)
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		GetDefinitionName: definitionNamer(gvs, eps),
		Definitions:       definitions(refsV3, eps),
	}, names...)
	if err != nil {
		return nil, fmt.Errorf("%w for %s: %w", ErrTypeConverter, res.GroupResource(), err)
	}
	tc, err := managedfields.NewTypeConverter(schemas, false)
	if err != nil {
		return nil, fmt.Errorf("%w for %s: %w", ErrTypeConverter, res.GroupResource(), err)
	}
	return tc, nil
}

// GoTypeConverter returns server-side apply's types of the Go types the models name,
// built from generated OpenAPI definitions (defs) as kube-apiserver builds its own
// (scheme names the models): list-map keys, atomic and granular structs and maps,
// and so the managed fields kube records. For the resources of kube's own types,
// whose schemas the catalog only approximates (registry.Resource.TypeConverter).
func GoTypeConverter(scheme *runtime.Scheme, defs common.GetOpenAPIDefinitions, models ...string) (managedfields.TypeConverter, error) {
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		GetDefinitionName: openapinamer.NewDefinitionNamer(scheme).GetDefinitionName,
		GetDefinitions:    defs,
	}, models...)
	if err != nil {
		return nil, fmt.Errorf("%w: the generated OpenAPI definitions: %w", ErrTypeConverter, err)
	}
	return managedfields.NewTypeConverter(schemas, false)
}
