package schema

import (
	"sort"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
)

// Prune removes, in place, every field of obj the schema does not specify, except below
// x-kubernetes-preserve-unknown-fields, and returns their paths in kube's notation, sorted:
// "spec.foo", "spec.items[0].bar", "spec.template.metadata.foo". These are what
// fieldValidation=Strict reports as `unknown field "spec.foo"` and Warn as warnings.
//
// The object's own apiVersion, kind and metadata are never touched (the caller owns
// ObjectMeta). The metadata of embedded resources (x-kubernetes-embedded-resource) is
// reduced to the fields of ObjectMeta. Embedded resources whose apiVersion, kind or
// metadata have the wrong JSON type are left as they are for Validate to report; the
// embedded resources after the first such one are then not reduced either.
func (s *Schema) Prune(obj map[string]interface{}) []string {
	if s == nil || obj == nil {
		return nil
	}
	unknown := pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if !s.hasEmbedded {
		return unknown
	}
	// Coerce only fails on a malformed embedded resource, which Validate reports.
	_, unknownMeta := objectmeta.CoerceWithOptions(nil, obj, s.structural, false, objectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if len(unknownMeta) == 0 {
		return unknown
	}
	unknown = append(unknown, unknownMeta...)
	sort.Strings(unknown)
	return unknown
}
