// Package store is the object store: it gives the objects of every resource their
// Kubernetes semantics on top of package storage, one file per verb:
//
//   - get.go, list.go, watch.go: reads, with resourceVersion semantics, paging,
//     selectors, conversion to the version asked for and defaulting; a watch either
//     sends its events to ResultChan from a goroutine of its own (Watch, for in-process
//     readers) or hands them to its reader's Sink in the reader's goroutine (Stream,
//     the server's watch responses), each event's object shared by every watch of
//     its version (SharedObject, encoded once per format); pacing.go paces a
//     Stream's flushes while its changes keep coming (WatchFlushInterval);
//   - cached.go: which lists and watches the watch caches (package watchcache) answer,
//     and how their shared changes become each watch's events: lists from a cache's
//     snapshot (a consistent list once the cache has seen etcd's current revision),
//     watches from its history and fan-out, and no event for a change that only
//     re-encoded its object (a storage migration);
//   - create.go, update.go, delete.go: generated metadata (uid, creationTimestamp,
//     generation), optimistic concurrency, preconditions (caughtup.go: a
//     resourceVersion behind the object by re-encodings only, of which watches sent
//     no event, counts as current), finalizers and
//     deletionTimestamp (with the garbage collector's orphan and foregroundDeletion
//     finalizers as a deletion's propagation policy asks), validation, and encoding
//     in the storage version; graceful.go: the grace period of resources that
//     delete gracefully (Pods);
//   - rewrite.go: the storage-migration fast path, re-encoding pages in place.
//
// informer.go is the source of the server's in-process client-go informers and
// reflectors: a ListWatch of one resource through the store (or straight from etcd).
//
// Readiness (readiness.go) is the server's wiring of the watch caches' readiness: the
// post-start hook storage-readiness, done once the caches open at start-up have
// loaded.
//
// Every call names its target with a Ref (resource, version, namespace, name), so a
// resource redefined at run time (a CRD's storage version flips) takes effect on the
// next call; the Store holds no per-resource state but caches (packages cache and
// watchcache).
// Updates and deletes take their preconditions the same way, in their options.
//
// Every error it returns for a request is an *apierrors.StatusError naming the
// resource, ready to be sent to a client. It must not know about HTTP.
package store
