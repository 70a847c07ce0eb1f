package schema

import "k8s.io/kube-openapi/pkg/validation/spec"

// OpenAPI returns the schema in kube-openapi form, as published in OpenAPI documents and
// fed to server-side apply type converters: x-kubernetes-int-or-string is unfolded into
// its anyOf [integer, string] form, and the Kubernetes vendor extensions are carried as
// extensions (x-kubernetes-preserve-unknown-fields, -embedded-resource, -int-or-string,
// -list-type, -list-map-keys, -map-type, -validations). Value validations, nullable and
// defaults are kept: a caller publishing OpenAPI v2 strips what v2 cannot say.
//
// The object's TypeMeta and ObjectMeta are as the schema gives them (normally metadata is
// `type: object`), and embedded resources' apiVersion, kind and metadata stay implicit:
// a document builder adds them, with its reference to ObjectMeta, as kube-apiserver's does
// (server-side apply refuses embedded objects whose metadata is not declared).
//
// Every call returns a new schema, which the caller may modify. A nil *Schema returns nil.
func (s *Schema) OpenAPI() *spec.Schema {
	if s == nil {
		return nil
	}
	return s.structural.DeepCopy().Unfold().ToKubeOpenAPI()
}
