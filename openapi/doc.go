// Package openapi publishes the OpenAPI documents of a Concord server and derives the
// server-side apply types of its resources, both from the resources of a
// registry.Registry, built-in and custom alike.
//
// Clients depend on these documents more than their name suggests: kubectl validates
// objects against them before create and apply (or, if the v3 document shows that PATCH
// takes a fieldValidation parameter, leaves validation to the server), kubectl explain
// reads them, and client-side apply computes strategic merge patches from them.
//
// # What it owns
//
//   - Service: the OpenAPI v2 document (/openapi/v2, JSON or the protobuf kubectl fetches)
//     and one OpenAPI v3 document per served group-version (/openapi/v3/apis/<group>/<version>,
//     /openapi/v3/api/v1), indexed with content hashes at /openapi/v3. Documents are built
//     when first asked for, and a request after a registry change first rebuilds what
//     changed, so that an answer is never older than the registry at the request; they
//     are served with ETags (k8s.io/kube-openapi handler and handler3). A server whose
//     documents nobody reads builds none: with 71 built-in resources a build is the
//     larger part of a server's start-up CPU (docs/benchmarks.md, "OpenAPI documents").
//   - The document contents, modelled on kube-apiserver's (the kube-openapi builders do the
//     assembly): per served version of a resource, its kind and list models; the
//     apimachinery models they use (generated, from k8s.io/apiextensions-apiserver); and
//     kube-apiserver's paths and operations for it (list, watch, create, update, patch,
//     delete, deletecollection, status and scale), with their query parameters.
//   - The models of a version whose kinds are Go types with generated definitions
//     (registry.Resource.GoDefinitions: kube's, for the built-in resources configured by
//     package kubesemantics, CustomResourceDefinitions and APIServices): those definitions
//     and every model they refer to, transitively, once per document, named and given
//     x-kubernetes-group-version-kind by the Go types' scheme, as kube-apiserver publishes
//     them (descriptions, defaults, x-kubernetes-* extensions, required lists). In the
//     v3 documents of their group-versions, DeleteOptions and WatchEvent name core/v1
//     beside the document's group-version, as kube-apiserver's do.
//   - The models of any other version, derived from its schema as kube-apiserver derives
//     those of custom resources: a model named after its Go type for built-in kinds
//     (io.k8s.api.coordination.v1.Lease) and after the reversed group otherwise
//     (com.example.stable.v1.CronTab), holding the version's schema with TypeMeta, a
//     reference to ObjectMeta and x-kubernetes-group-version-kind, and its list model.
//   - TypeConverter: the structured-merge-diff types of a resource, over the same models, so
//     that managed fields merge list-maps, sets and granular maps item by item; and
//     Ordered, which makes any converter's values walk their large maps in key order
//     (structured-merge-diff's field sets are quadratic in a map's keys otherwise).
//
// A version without a schema is an object preserving unknown fields (in v2, where kubectl
// would flag every unlisted field, a bare object). OpenAPI v2 cannot say everything v3
// can: nullable, anyOf, oneOf and not are dropped there as kube-apiserver drops them,
// and so are defaults, which kube-apiserver publishes in v3 only.
//
// # What it must not touch
//
// Resources are read, never changed; models and converters derived from a Resource are
// cached on it (registry.Resource.Cached) and go with it; what is derived from a
// registry.GoDefinitions (its definitions, built once in each reference style) is
// cached for the process, per GoDefinitions, and shared read-only by every build. The package does not serve the
// REST API, validate objects (package schema does) or decide who may read the documents:
// the caller mounts the handlers behind its authentication and authorization.
//
// # Usage
//
//	svc := openapi.New(reg) // documents of reg, built on request
//	svc.InstallV2(mux)
//	svc.InstallV3(mux)
//
// and, for server-side apply of a resource:
//
//	tc, err := openapi.TypeConverter(res)
//	if err != nil {
//		return err // matches openapi.ErrTypeConverter
//	}
//	fm, err := managedfields.NewDefaultCRDFieldManager(tc, convertor, defaulter, creater, gvk, hub, false, resetFields)
package openapi
