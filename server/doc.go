// Package server is Concord's HTTP front: the handler chain every request passes,
// defined once in Server.Chain (its filters live in package filters, or plug into its
// named slots from the packages that guard resources), and the handlers behind it:
// discovery (legacy and aggregated), the REST verbs of every resource in the registry
// (one file per verb: get.go, list.go, watch.go, create.go, update.go, patch.go,
// delete.go), the storage-migration rewrite, tables, partial object metadata, the
// status and scale subresources, the subresources resources define (actions, connect
// subresources, their semantics' own), /version and /metrics. Subpackages: request (what a
// request's method and URL say), respond (negotiated answers and errors), filters.
//
// It serves whatever the registry holds at the time of each request, so resources
// added or redefined at run time (CRDs, a storage version flip) need no restart. It
// turns HTTP into registry calls and registry results into HTTP; object semantics
// (metadata, concurrency, conversion, storage) belong to package registry, and every
// error it writes is a metav1.Status.
//
// It must not import the packages that assemble or extend a server (controlplane,
// apiextensions, storageversion, migration): they plug in through Config.
package server
