// Package registry owns what a Concord server persists: resource definitions
// (Resource, Version), the Registry of resources currently known, conversion between
// versions, the storage codec (objects encoded in the storage version, decoded from any
// decodable version), and the object store that gives objects Kubernetes semantics on
// top of package storage (uid, resourceVersion, generation, creationTimestamp,
// finalizers and deletionTimestamp, preconditions, selectors).
//
// A Resource is data. Where it comes from (the compatibility package's API catalog, or
// a CustomResourceDefinition) and how it is chosen (emulation version, runtime config)
// is decided elsewhere; this package only applies it. It must not know about HTTP
// (package server) or about etcd beyond package storage.
package registry
