// Package cache holds the caches the object store consults, each over raw storage
// (package storage) and each safe for concurrent use:
//
//   - Recent remembers the stored bytes and revision of objects this server lately
//     read, wrote or saw change, so that an update can start from them instead of
//     reading etcd first. An entry may be stale; the store trusts it only for a write
//     conditional on its revision.
//   - Namespaces answers whether objects may be created in a namespace (it exists and
//     is not terminating), from a watch of the stored namespaces with a live read on
//     a miss, and for a while after this server began deleting the namespace:
//     Kubernetes' NamespaceLifecycle admission.
//
// It must not know about resources' definitions, HTTP or clients: it caches what is
// stored, and the store decides what it means.
package cache
