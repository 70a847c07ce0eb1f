// Package watchcache keeps, per resource, the stored objects and their recent changes
// in memory, fed by one etcd watch, so that a server answers lists and watches without
// reading etcd again: Kubernetes' watch cache.
//
// A Cache follows one key prefix (a resource, every namespace). It loads the prefix at
// one revision, then applies etcd's changes a batch at a time, so that its state is
// always the state of a whole revision (etcd never splits a transaction across
// batches). It gives out:
//
//   - Snapshots: its state at its current revision, a copy-on-write clone of a B-tree
//     made in constant time, which lists read without holding any lock. A snapshot
//     that a paged list started is kept for a while, so that the list's continue tokens
//     page through that one state;
//   - Watchers: queues of the changes after a revision, replayed from its history of
//     recent changes and then fanned out as they arrive, without ever blocking the
//     cache (a watcher that falls too far behind is ended, as Kubernetes ends slow
//     watchers);
//   - freshness: WaitFresh returns once the cache has seen a revision, asking etcd for
//     a progress notification when nothing under the prefix changes. That is how a
//     consistent list (resourceVersion "") is answered from memory: read etcd's
//     current revision, wait until the cache has reached it, read a snapshot.
//
// Caches, the set of a server's caches, starts a cache when a resource is first listed
// or watched and stops it once it has been unused for a while, so a resource that no
// one lists or watches costs nothing. It keeps the caches' estimated memory under a
// limit, stopping the least recently used caches when the limit is exceeded (their
// reads go to etcd until memory allows again), and reports every figure as a metric.
// A private Cache, without state, serves one watch from a revision older than the
// shared cache's history, straight from etcd's, until it has caught up with that
// history: the watch then joins the shared cache and the private etcd watch ends (a
// watcher ended for falling behind, which watches again from where it was, would
// otherwise stay on a watch of its own that reads every change's previous value
// from etcd); a store's storage-only watch uses one throughout. A private Cache is
// paced by its one watcher: while the watcher holds maxPending changes it has yet to
// take, the cache reads nothing from etcd (its etcd watch is closed), and it watches again from where it stood once the watcher has
// taken them; such a watcher is never ended for falling behind.
//
// It caches stored bytes, never decoded objects, and beside each object the one
// encoded form a reader last kept (Entry.KeepEncoded: a list's item in a version and
// format, sent again by the next list as long as the object does not change), counted
// in its memory. It must not know what the bytes mean:
// decoding, selection, conversion and the Kubernetes rules of which read may be
// answered from memory belong to the object store (registry/store). It must not know
// about HTTP or clients.
package watchcache
