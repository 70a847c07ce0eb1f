// Package schema applies structural OpenAPI v3 schemas, the kind CustomResourceDefinitions
// carry, to objects held as unstructured JSON (map[string]interface{}). Built-in and custom
// resources alike go through it: a resource version's openAPIV3Schema is compiled once, and
// the compiled *Schema then defaults, prunes and validates every object written or read.
//
// # What it owns
//
//   - Compile: the structural check of a schema (kube's rules and messages, under a field
//     path the caller chooses) plus the checks the algorithms below rely on (list and map
//     types, properties versus additionalProperties, valid and pruned defaults).
//   - Default: structural defaulting, including the dropping of nulls that a non-nullable
//     field without default cannot hold.
//   - Prune: removal of fields the schema does not know, reporting their paths, and the
//     coercion of embedded resources' metadata to ObjectMeta.
//   - Validate and ValidateUpdate: OpenAPI value validation (k8s.io/kube-openapi), embedded
//     resources' apiVersion, kind and ObjectMeta, list-type set and map uniqueness, and
//     x-kubernetes-validations CEL rules, evaluated in the StoredExpressions environment
//     of KEP-4330 (every CEL library the binary has).
//   - OpenAPI: the kube-openapi form of a schema with its vendor extensions, for OpenAPI
//     documents and server-side apply type converters.
//
// The algorithms are those of k8s.io/apiextensions-apiserver's structural schema leaf
// packages (pkg/apiserver/schema and its pruning, defaulting, objectmeta, listtype and cel
// subpackages, and pkg/apiserver/validation); this package wires them together so that
// Concord behaves as kube-apiserver does, field paths and messages included.
//
// # What it must not touch
//
// The top-level apiVersion, kind and metadata of an object belong to the caller: they are
// never pruned, and metadata is checked only as far as the schema says (normally
// `type: object`); names, namespaces, labels and the rest of ObjectMeta are validated by
// the registry. Full CustomResourceDefinition validation (names, versions, CEL cost
// estimates, which CEL libraries a new rule may use, ...) belongs to the apiextensions
// package: Compile is the gate a schema must pass to be served, not a substitute for it.
//
// # Usage
//
// Compile each resource version's schema once, when the resource is registered:
//
//	s, err := schema.Compile(ctx, version.Schema, field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema"))
//	if err != nil {
//		var invalid *schema.InvalidSchemaError
//		if errors.As(err, &invalid) {
//			// invalid.Errors is a field.ErrorList, ready for apierrors.NewInvalid.
//		}
//		return err
//	}
//
// then, on every write, in this order:
//
//	unknown := s.Prune(obj)   // fieldValidation=Strict turns these into `unknown field "spec.foo"`
//	s.Default(obj)
//	errs := s.Validate(ctx, obj) // or s.ValidateUpdate(ctx, obj, old)
//
// and on every read from storage, s.Default(obj) (kube defaults on read too, so that a
// default added to a schema shows up in objects stored before).
//
// A *Schema is immutable and safe for concurrent use. A nil *Schema stands for a resource
// without a schema: it prunes nothing, defaults nothing and accepts every object.
package schema
