// Package store is the object store: it gives the objects of every resource their
// Kubernetes semantics on top of package storage, one file per verb:
//
//   - get.go, list.go, watch.go: reads, with resourceVersion semantics, paging,
//     selectors, conversion to the version asked for and defaulting; watches share one
//     etcd watch per resource (watchhub.go);
//   - create.go, update.go, delete.go: generated metadata (uid, creationTimestamp,
//     generation), optimistic concurrency, preconditions, finalizers and
//     deletionTimestamp, validation, and encoding in the storage version;
//   - rewrite.go: the storage-migration fast path, re-encoding pages in place.
//
// Every call names its target with a Ref (resource, version, namespace, name), so a
// resource redefined at run time (a CRD's storage version flips) takes effect on the
// next call; the Store holds no per-resource state but caches (package cache).
// Updates and deletes take their preconditions the same way, in their options.
//
// Every error it returns for a request is an *apierrors.StatusError naming the
// resource, ready to be sent to a client. It must not know about HTTP.
package store
