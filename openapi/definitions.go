package openapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/concordproject/concord/registry"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Extension names this package writes or reads.
const (
	extGVK                   = "x-kubernetes-group-version-kind"
	extAction                = "x-kubernetes-action"
	extPreserveUnknownFields = "x-kubernetes-preserve-unknown-fields"
	extEmbeddedResource      = "x-kubernetes-embedded-resource"
)

// refPrefix is where a document keeps its schemas: OpenAPI v2 and v3 differ.
type refPrefix string

const (
	refsV2 refPrefix = "#/definitions/"
	refsV3 refPrefix = "#/components/schemas/"
)

// ref returns the reference to the named model.
func (p refPrefix) ref(model string) string {
	return string(p) + common.EscapeJsonPointer(model)
}

// callback returns the reference callback of generated definitions.
func (p refPrefix) callback() common.ReferenceCallback {
	return func(model string) spec.Ref { return spec.MustCreateRef(p.ref(model)) }
}

// Model names of the apimachinery types every document refers to.
var (
	objectMetaModel    = metav1.ObjectMeta{}.OpenAPIModelName()
	listMetaModel      = metav1.ListMeta{}.OpenAPIModelName()
	typeMetaModel      = metav1.TypeMeta{}.OpenAPIModelName()
	statusModel        = metav1.Status{}.OpenAPIModelName()
	deleteOptionsModel = metav1.DeleteOptions{}.OpenAPIModelName()
	watchEventModel    = metav1.WatchEvent{}.OpenAPIModelName()
	scaleModel         = autoscalingv1.Scale{}.OpenAPIModelName()
)

// scaleGVK is the kind the scale subresource reads and writes.
var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// staticDefinitions returns the generated definitions of the apimachinery types (ObjectMeta,
// ListMeta, Status, DeleteOptions, WatchEvent, Patch, ...) and of autoscaling/v1 Scale, with
// references in the given style. The maps are built once and shared: read them, never
// change them.
func staticDefinitions(p refPrefix) map[string]common.OpenAPIDefinition {
	if p == refsV2 {
		return staticDefinitionsV2()
	}
	return staticDefinitionsV3()
}

var (
	staticDefinitionsV2 = sync.OnceValue(func() map[string]common.OpenAPIDefinition {
		return generatedopenapi.GetOpenAPIDefinitions(refsV2.callback())
	})
	staticDefinitionsV3 = sync.OnceValue(func() map[string]common.OpenAPIDefinition {
		return generatedopenapi.GetOpenAPIDefinitions(refsV3.callback())
	})
)

// typeMetaProperty returns the generated schema of TypeMeta's apiVersion or kind.
func typeMetaProperty(p refPrefix, name string) spec.Schema {
	return staticDefinitions(p)[typeMetaModel].Schema.Properties[name]
}

// definitionNamer returns the GetDefinitionName of a document serving gvs from eps: model
// names are used as they are, the apimachinery kinds that travel in every group-version
// get the group-version-kind extension clients index models by, and the models of Go
// types (registry.GoDefinitions) get theirs from their scheme, as kube-apiserver's do.
func definitionNamer(gvs []schema.GroupVersion, eps []*endpoint) func(string) (string, spec.Extensions) {
	var sources []*goSource
	for _, ep := range eps {
		if g := ep.models.source; g != nil && !slices.Contains(sources, g) {
			sources = append(sources, g)
		}
	}
	return func(name string) (string, spec.Extensions) {
		var gvks []schema.GroupVersionKind
		switch name {
		case statusModel:
			gvks = []schema.GroupVersionKind{metav1.Unversioned.WithKind("Status")}
		case scaleModel:
			gvks = []schema.GroupVersionKind{scaleGVK}
		case deleteOptionsModel, watchEventModel:
			kind := name[strings.LastIndex(name, ".")+1:]
			for _, gv := range gvs {
				gvks = append(gvks, gv.WithKind(kind))
			}
		}
		if len(gvks) > 0 {
			return name, spec.Extensions{extGVK: gvkExtension(gvks...)}
		}
		for _, g := range sources {
			if ext, ok := g.extensions[name]; ok {
				return name, ext
			}
		}
		return name, nil
	}
}

// gvkExtension is the value of x-kubernetes-group-version-kind in a model: a list of
// {group, version, kind} objects, in the generic form the managed fields type converter
// and JSON both read.
func gvkExtension(gvks ...schema.GroupVersionKind) []interface{} {
	out := make([]interface{}, 0, len(gvks))
	for _, gvk := range gvks {
		out = append(out, map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
	}
	return out
}

// goTypes knows the Go types of the built-in kinds, so that their models get the names
// kube-apiserver publishes them under (io.k8s.api.coordination.v1.Lease, ...).
var goTypes = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("registering the built-in API types: %v", err))
		}
	}
	return s
})

// modelName returns the name of the model describing gvk. A kind with a Go type in
// client-go or apiextensions is named after it, as in kube-apiserver; any other kind is
// named as kube-apiserver names custom resources, the group's DNS labels reversed:
// stable.example.com/v1 CronTab is com.example.stable.v1.CronTab.
func modelName(gvk schema.GroupVersionKind) string {
	if obj, err := goTypes().New(gvk); err == nil {
		name := util.GetCanonicalTypeName(obj)
		if strings.Contains(name, "/") { // a Go package path, from a type without a model name
			name = util.ToRESTFriendlyName(name)
		}
		// metav1 kinds (Status, WatchEvent, ...) are registered in every group-version:
		// a resource of that kind must not take the shared model's name.
		if !strings.HasPrefix(name, "io.k8s.apimachinery.") {
			return name
		}
	}
	if gvk.Group == "" {
		return "io.k8s.api.core." + gvk.Version + "." + gvk.Kind
	}
	labels := strings.Split(gvk.Group, ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".") + "." + gvk.Version + "." + gvk.Kind
}

// modelSample stands for a model without a Go type in the kube-openapi builders, which
// name request and response bodies after sample values.
type modelSample string

// OpenAPIModelName implements util.OpenAPIModelNamer.
func (m modelSample) OpenAPIModelName() string { return string(m) }

// models describe one version of one resource: its kind and list kind models in both
// OpenAPI versions, and what its routes depend on. They are derived from the Resource
// alone, cached on it, and read-only once built.
type models struct {
	gvk, listGVK       schema.GroupVersionKind
	kindName, listName string // model names
	// source, if set, defines the kind model and, unless listV2 and listV3 are set,
	// the list model (and those they refer to), as generated from Go types; kindV2
	// and kindV3 are then unset.
	source         *goSource
	kindV2, listV2 spec.Schema
	kindV3, listV3 spec.Schema

	plural     string
	namespaced bool
	// status and scale tell which subresources the version has.
	status, scale bool
	// review is set for reviews, which are only created (registry.Hooks.Review).
	review bool
	// goType is set for kinds client-go has Go types for: the server reads them as
	// protobuf and patches them strategically.
	goType bool
	// selectableFieldPaths are the version's extra field selector paths, without the
	// leading dot.
	selectableFieldPaths []string
}

// modelsKey caches models on a registry.Resource, per version.
type modelsKey struct{ version string }

// modelsFor returns the models of version v of res, building them on first use.
func modelsFor(res *registry.Resource, v string) (*models, error) {
	m, err := res.Cached(modelsKey{v}, func() (any, error) { return buildModels(res, v) })
	if err != nil {
		return nil, err
	}
	return m.(*models), nil
}

func buildModels(res *registry.Resource, v string) (*models, error) {
	ver := res.Version(v)
	if ver == nil {
		return nil, fmt.Errorf("resource %s has no version %q", res.GroupResource(), v)
	}
	listKind := res.Names.ListKind
	if listKind == "" {
		listKind = res.Names.Kind + "List"
	}
	gv := res.GroupVersion(v)
	m := &models{
		gvk:        gv.WithKind(res.Names.Kind),
		listGVK:    gv.WithKind(listKind),
		namespaced: res.Namespaced,
		plural:     res.Names.Plural,
	}
	m.kindName, m.listName = modelName(m.gvk), modelName(m.listGVK)
	m.goType = clientgoscheme.Scheme.Recognizes(m.gvk)
	m.review = !res.Persisted() && !res.Computed()
	if sub := ver.Subresources; sub != nil {
		m.status = sub.Status != nil
		m.scale = sub.Scale != nil
	}
	for _, f := range ver.SelectableFields {
		m.selectableFieldPaths = append(m.selectableFieldPaths, strings.TrimPrefix(f.JSONPath, "."))
	}

	if res.GoDefinitions != nil {
		g := sourceOf(res.GoDefinitions)
		if kind, ok := g.modelOf(res.GoDefinitions, m.gvk); ok {
			m.kindName, m.source = kind, g
			if list, ok := g.modelOf(res.GoDefinitions, m.listGVK); ok {
				m.listName = list
				return m, nil
			}
		}
	}
	if m.source == nil {
		compiled := res.Schema(v)
		m.kindV2 = kindModel(m, compiled.OpenAPI(), refsV2)
		m.kindV3 = kindModel(m, compiled.OpenAPI(), refsV3)
	}
	// A kind without a list kind of its own (core/v1 Binding) still has its list
	// published, as Concord serves it.
	m.listV2 = listModel(m, refsV2)
	m.listV3 = listModel(m, refsV3)
	return m, nil
}

// kindModel completes the schema of a version (nil when it has none) into the model of
// its kind: TypeMeta and a reference to ObjectMeta at the root and in embedded resources,
// and the group-version-kind extension.
//
// OpenAPI v2 is for kubectl's client-side validation, which refuses fields a schema does
// not list: a version without schema, or whose root preserves unknown fields, is published
// as a bare object there, and nested schemas lose what v2 cannot say (see downgradeToV2).
func kindModel(m *models, s *spec.Schema, p refPrefix) spec.Schema {
	var out *spec.Schema
	switch {
	case p == refsV2 && (s == nil || preservesUnknownFields(s)):
		out = &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
	case s == nil:
		// Anything goes, but TypeMeta and ObjectMeta are still known: server-side apply
		// then tracks metadata fields granularly and the rest as a whole.
		out = &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
		out.AddExtension(extPreserveUnknownFields, true)
		addObjectMeta(out, p)
	default:
		out = s
		if p == refsV2 {
			downgradeToV2(out)
		}
		addObjectMeta(out, p)
		addEmbeddedObjectMeta(out, p)
	}
	out.AddExtension(extGVK, gvkExtension(m.gvk))
	if len(m.selectableFieldPaths) > 0 {
		fields := make([]interface{}, 0, len(m.selectableFieldPaths))
		for _, f := range m.selectableFieldPaths {
			fields = append(fields, map[string]interface{}{"fieldPath": f})
		}
		out.AddExtension("x-kubernetes-selectable-fields", fields)
	}
	return *out
}

// addObjectMeta sets apiVersion, kind and metadata of an object schema to TypeMeta's
// properties and a reference to ObjectMeta, whatever the schema said of them.
func addObjectMeta(s *spec.Schema, p refPrefix) {
	s.SetProperty("apiVersion", typeMetaProperty(p, "apiVersion"))
	s.SetProperty("kind", typeMetaProperty(p, "kind"))
	s.SetProperty("metadata", *spec.RefSchema(p.ref(objectMetaModel)).
		WithDescription(metav1.PartialObjectMetadata{}.SwaggerDoc()["metadata"]))
}

// addEmbeddedObjectMeta declares apiVersion, kind and metadata in every embedded resource
// below s, and requires apiVersion and kind as the server does. In OpenAPI v2, nodes that
// preserve unknown fields are left alone: they have no properties there.
func addEmbeddedObjectMeta(s *spec.Schema, p refPrefix) {
	for name, prop := range s.Properties {
		addEmbeddedObjectMeta(&prop, p)
		s.Properties[name] = prop
	}
	if s.Items != nil && s.Items.Schema != nil {
		addEmbeddedObjectMeta(s.Items.Schema, p)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		addEmbeddedObjectMeta(s.AdditionalProperties.Schema, p)
	}
	if p == refsV2 && preservesUnknownFields(s) {
		return
	}
	if embedded, _ := s.Extensions.GetBool(extEmbeddedResource); !embedded {
		return
	}
	addObjectMeta(s, p)
	for _, name := range []string{"apiVersion", "kind"} {
		if !slices.Contains(s.Required, name) {
			s.Required = append(s.Required, name)
		}
	}
}

func preservesUnknownFields(s *spec.Schema) bool {
	b, _ := s.Extensions.GetBool(extPreserveUnknownFields)
	return b
}

// downgradeToV2 rewrites, in place, a structural schema in kube-openapi v3 form into what
// OpenAPI v2 (and kubectl's reading of it) can hold:
//   - allOf, anyOf, oneOf and not go (v2 has no anyOf, oneOf or not; int-or-string
//     fields thereby become untyped, which is what they are in v2);
//   - nullable goes, and a nullable field loses its type, properties and items (v2 cannot
//     say "null or T", so it says "anything") and is no longer required by its parent;
//   - a node preserving unknown fields loses its properties and items, and its type if it
//     is an object, so that kubectl does not flag the unknown fields;
//   - an array without an item schema loses its type.
func downgradeToV2(s *spec.Schema) {
	s.AllOf, s.AnyOf, s.OneOf, s.Not = nil, nil, nil, nil

	if len(s.Required) > 0 {
		s.Required = slices.DeleteFunc(slices.Clone(s.Required), func(name string) bool {
			prop, ok := s.Properties[name]
			return ok && prop.Nullable
		})
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && s.AdditionalProperties.Schema.Nullable {
			s.Required = nil
		}
		if len(s.Required) == 0 {
			s.Required = nil
		}
	}

	if s.Nullable {
		s.Nullable = false
		s.Type = nil
		s.Properties, s.Items = nil, nil
	}
	if preservesUnknownFields(s) {
		s.Properties, s.Items = nil, nil
		if s.Type.Contains("object") {
			s.Type = nil
		}
	}
	if s.Type.Contains("array") && (s.Items == nil || s.Items.Schema == nil) {
		s.Type = nil
	}

	for name, prop := range s.Properties {
		downgradeToV2(&prop)
		s.Properties[name] = prop
	}
	if s.Items != nil && s.Items.Schema != nil {
		downgradeToV2(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		downgradeToV2(s.AdditionalProperties.Schema)
	}
}

// listModel returns the model of a version's list kind.
func listModel(m *models, p refPrefix) spec.Schema {
	s := &spec.Schema{SchemaProps: spec.SchemaProps{
		Description: fmt.Sprintf("%s is a list of %s objects.", m.listGVK.Kind, m.gvk.Kind),
		Type:        spec.StringOrArray{"object"},
		Required:    []string{"items"},
	}}
	s.SetProperty("apiVersion", typeMetaProperty(p, "apiVersion"))
	s.SetProperty("kind", typeMetaProperty(p, "kind"))
	s.SetProperty("items", *spec.ArrayProperty(spec.RefSchema(p.ref(m.kindName))).
		WithDescription(fmt.Sprintf("The %s in the list.", m.plural)))
	s.SetProperty("metadata", *spec.RefSchema(p.ref(listMetaModel)).
		WithDescription(metav1.PartialObjectMetadataList{}.SwaggerDoc()["metadata"]))
	s.AddExtension(extGVK, gvkExtension(m.listGVK))
	return *s
}

// definitions returns the static definitions of style p plus the models of eps, for one
// build: those derived from their schemas, or those of their Go types and what these
// refer to, transitively. The kube-openapi builders write to the extensions of the
// definitions they use (if only to delete from them): each definition gets its own
// extensions map, so that builds may run concurrently over the shared models.
func definitions(p refPrefix, eps []*endpoint) map[string]common.OpenAPIDefinition {
	static := staticDefinitions(p)
	defs := make(map[string]common.OpenAPIDefinition, len(static)+2*len(eps))
	add := func(name string, def common.OpenAPIDefinition) {
		def.Schema.Extensions = maps.Clone(def.Schema.Extensions)
		defs[name] = def
	}
	for name, def := range static {
		add(name, def)
	}
	for _, ep := range eps {
		m := ep.models
		kind, list := m.kindV3, m.listV3
		if p == refsV2 {
			kind, list = m.kindV2, m.listV2
		}
		if m.source == nil {
			add(m.kindName, common.OpenAPIDefinition{Schema: kind, Dependencies: []string{objectMetaModel}})
		}
		if list.Type != nil {
			add(m.listName, common.OpenAPIDefinition{Schema: list, Dependencies: []string{m.kindName, listMetaModel}})
		}
	}
	for _, ep := range eps {
		if g := ep.models.source; g != nil {
			addClosure(defs, g, p, ep.models.kindName, ep.models.listName)
		}
	}
	return defs
}
