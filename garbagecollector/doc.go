// Package garbagecollector deletes the objects whose owners are gone, as Kubernetes'
// garbage collector (kube-controller-manager's) does, and completes the deletions
// that wait for it: owners deleted with the orphan finalizer (propagationPolicy
// Orphan) and with the foregroundDeletion finalizer (Foreground). The object store
// adds those finalizers when a deletion asks for them (registry/store's Delete);
// this package does the rest.
//
// # What it owns
//
//   - The dependency graph (graph.go): the objects of every resource the server
//     serves and stores, built-in or custom (but Events), with their owner
//     references and dependents, fed by monitors (monitors.go), client-go
//     reflectors of the store's objects (read straight from etcd) into a compact
//     store of their metadata (followed.go: numbers, an arena of bytes and a table,
//     nothing for Go's collector to trace), which the graph observes change by
//     change, so that a monitor reads etcd no faster than the graph takes its
//     changes; they follow the registry as CRDs come and go. An object that nothing
//     refers to and
//     that refers to nothing (no owners, no deletion under way, none of the
//     collector's finalizers) has no node, only its namespace by uid: a dependent
//     that names it later finds it in its monitor, in its namespace or another. An
//     owner named but not observed is a "virtual" node, checked against the API.
//   - Attempt to delete (delete.go): an object whose owners may be gone is read from
//     the API with each of its owners; it is deleted only if none exists (an owner
//     whose uid differs is absent), its references to absent owners are removed if
//     one lives, and the deletion's preconditions (uid, resourceVersion) make sure it
//     is the object that was judged. An owner deleted in the foreground waits until
//     no dependent with blockOwnerDeletion remains; its dependents are deleted, in the
//     foreground themselves when they have dependents of their own.
//   - Attempt to orphan (orphan.go): the dependents of an owner deleted with the
//     orphan finalizer lose their reference to it, then the finalizer goes. The graph
//     remembers the owners it orphaned and the revision it finished at (the last
//     few thousand): monitors of different resources are not ordered with one
//     another, so a dependent may be reported after its owner's orphaning is done,
//     and once the owner is gone, a reference the dependent had at that revision
//     (it is unchanged since, or the API's history at that revision says so) is
//     removed rather than taken for a reference to an absent owner. A reference made
//     later is collected, as in Kubernetes, unless that history is compacted (then
//     it is removed: nothing is deleted on a guess). The memory is the term's: a
//     new leader that learns of such a late dependent takes it for an absent
//     owner's, as Kubernetes' collector does.
//   - The Warning Event OwnerRefInvalidNamespace on a dependent that names an owner
//     of another namespace (such a reference resolves to nothing, as a cluster-scoped
//     object's reference to a namespaced owner does).
//
// Every read that decides and every write goes through the API (the server's
// loopback, a metadata client), so that the collector's requests are authorized,
// admitted and audited as any client's; only the monitors read the store in process.
//
// # Several servers
//
// Every server runs a Collector; the server that leads the servers' election of their
// controllers (Lease kube-system/concord-controllers, feature.Server's Election)
// alone collects (package reconcile's Campaign and controllers, with their metrics and
// logs). A term of leadership
// keeps nothing from the previous one: a new leader builds its graph from what the
// monitors list and continues from there, whatever the previous leader had done when
// it stopped or died; every decision is taken again on what the API reads.
// NewFeature is its server wiring: the server's Collector as a feature, elected
// through the server's election, which is timed from the servers' identity lease
// duration.
//
// # What it must not touch
//
// It never touches etcd: it reads the store only through its monitors (and, when a
// resource stops being served, to see which of the objects its monitor knew remain),
// and writes only through the API, deletions preconditioned. The delete path's
// finalizers and per-resource defaults are the store's (registry/store, and
// registry.Resource's GarbageCollection set by package builtin).
package garbagecollector
