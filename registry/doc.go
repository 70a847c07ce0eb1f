// Package registry owns what a Concord server knows about the resources it persists:
// their definitions (Resource, Version, Hooks), the Registry of resources currently
// served, conversion between versions, the storage codec (objects are encoded in the
// storage version and decoded from any decodable version), validation of objects
// against a definition (metadata, schema, hooks) and selectors (Predicate). A resource
// may share another's storage (SharedStorage: its objects are the owner's, in the
// owner's stored form, converted on the way in and out) or be computed on read, never
// stored (Hooks.Compute).
//
// A Resource is data. Where it comes from (the compatibility package's API catalog, or
// a CustomResourceDefinition) and how it is chosen (emulation version, runtime config)
// is decided elsewhere; this package only applies it.
//
// Subpackages:
//
//   - store: the object store, one file per verb (get, list, watch, create, update,
//     delete, rewrite): Kubernetes' object semantics over package storage;
//   - cache: the caches the store consults (recently seen objects, namespaces).
//
// It must not know about HTTP (package server), about etcd beyond package storage, or
// about the packages that assemble a server.
package registry
