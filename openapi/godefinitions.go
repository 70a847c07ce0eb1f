package openapi

import (
	"maps"
	"sync"

	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// goSource is what a registry.GoDefinitions gives the documents, derived once per
// GoDefinitions: its definitions with references in either style, and the names and
// group-version-kind extensions of its models.
type goSource struct {
	once       sync.Once
	defsV2     map[string]common.OpenAPIDefinition
	defsV3     map[string]common.OpenAPIDefinition
	extensions map[string]spec.Extensions // by model name, of the models the scheme knows
}

// goSources holds the goSource of each registry.GoDefinitions met.
var goSources sync.Map // *registry.GoDefinitions → *goSource

// sourceOf returns what src gives, deriving it on first use. The generated definitions
// are read-only: builds copy what they change (see definitions).
func sourceOf(src *registry.GoDefinitions) *goSource {
	v, _ := goSources.LoadOrStore(src, &goSource{})
	g := v.(*goSource)
	g.once.Do(func() {
		g.defsV2 = src.Definitions(refsV2.callback())
		g.defsV3 = src.Definitions(refsV3.callback())
		namer := openapinamer.NewDefinitionNamer(src.Scheme)
		g.extensions = map[string]spec.Extensions{}
		for name := range g.defsV3 {
			if _, ext := namer.GetDefinitionName(name); ext != nil {
				g.extensions[name] = ext
			}
		}
	})
	return g
}

// definitions returns the source's definitions with references in style p.
func (g *goSource) definitions(p refPrefix) map[string]common.OpenAPIDefinition {
	if p == refsV2 {
		return g.defsV2
	}
	return g.defsV3
}

// modelOf returns the name of the model the source defines for gvk, if it does.
func (g *goSource) modelOf(src *registry.GoDefinitions, gvk schema.GroupVersionKind) (string, bool) {
	obj, err := src.Scheme.New(gvk)
	if err != nil {
		return "", false
	}
	name := util.GetCanonicalTypeName(obj)
	if _, ok := g.defsV3[name]; !ok {
		return "", false
	}
	return name, true
}

// addClosure adds to defs the definitions of src in style p that the named models
// depend on, transitively, each once; a model defs already has (the apimachinery
// ones, shared by every source) is kept, with what it depends on. Every definition
// added gets its own extensions map (see definitions).
func addClosure(defs map[string]common.OpenAPIDefinition, g *goSource, p refPrefix, names ...string) {
	all := g.definitions(p)
	for len(names) > 0 {
		name := names[len(names)-1]
		names = names[:len(names)-1]
		if _, done := defs[name]; done {
			continue
		}
		def, ok := all[name]
		if !ok {
			continue // the builders report it
		}
		def.Schema.Extensions = maps.Clone(def.Schema.Extensions)
		defs[name] = def
		names = append(names, def.Dependencies...)
	}
}
