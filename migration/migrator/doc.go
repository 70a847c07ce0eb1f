// Package migrator rewrites every object of one resource so that the API server
// encodes it again in the resource's current storage version: the work of one storage
// version migration, without deciding when one is needed (the trigger in package
// migration does) or recording it in an API object (the migration controller does,
// from the Checkpoints this package reports).
//
// # Two paths, same results
//
// The client path works against any Kubernetes-style API server: it lists the
// resource in pages (limit and continue) and writes each object back unchanged with a
// PUT carrying the resourceVersion it read. A server re-encodes such a no-op write
// only if the stored bytes differ from what it would write now, so the resourceVersion
// moves exactly for the objects that needed it; that move is the proof of work the
// migrator counts as migrated.
//
//   - 409 Conflict: the object changed since it was listed; the write that changed it
//     encoded it in the current version. Skipped.
//   - 404 Not Found: deleted meanwhile. Skipped.
//   - 429, 5xx, timeouts and broken connections: retried with exponential backoff
//     (honouring Retry-After) up to Options.MaxAttempts, then reported as failed.
//   - anything else (422 no longer valid, 403, 400, ...): reported as failed at once.
//
// Failed objects are skipped and reported (Failure: namespace, name, reason), never
// retried for ever: one bad object does not hold up the others.
//
// Each worker writes over its own HTTP/1.1 connection (up to 25 workers; more share
// HTTP/2 connections): an exchange on a connection of its own crosses fewer goroutines
// at both ends than one multiplexed on HTTP/2, and every write of the client path is
// such an exchange. The next page is listed, and its items read, while the current one
// is written.
//
// The server path is Concord's fast path, POST /concord/v1/rewrite/<group>/<resource>
// (registry.Store.Rewrite): the server reads a page, re-encodes what needs it and
// writes it back in batches of etcd transactions under the same preconditions, and
// answers with the same counts. The migrator uses it when the server answers it (Mode
// Auto) and falls back to the client path when the server does not know it.
//
// # Held to the StorageVersion
//
// A migration the trigger starts names the resourceVersion of the resource's
// StorageVersion object it was started for (Resource.StorageVersion): the servers'
// storage versions as they agreed then. A server that writes a change of its entry
// (one of another release joins, a rollback starts, a custom resource's storage
// version switches) moves that object, and the migration must not go on rewriting
// objects under storage versions nobody agreed on. What each path guarantees:
//
//   - Server path (Concord owns the storage): each call carries the resourceVersion
//     (wire.RewriteStorageVersionParam), and the server makes the page's writes in
//     etcd transactions that also compare the StorageVersion key's mod revision with
//     it. Once the key moved, no object is rewritten: the change and the rewrites are
//     ordered by etcd itself. The server says so (StorageVersionChanged), and Migrate
//     returns ErrStorageVersionChanged with the checkpoint before that page. An older
//     Concord that ignores the parameter has the StorageVersion read before each call
//     instead, as below.
//   - Client path (any Kubernetes-style server): a write through the generic API can
//     be conditioned on the object's own resourceVersion only, so the migrator reads
//     the StorageVersion before each page's writes and stops with
//     ErrStorageVersionChanged before a page once it moved. The writes of a page
//     already started when the change is written may still land after it: at most one
//     page (Options.PageSize objects) is rewritten after the change. Each such write
//     is an ordinary update: the server that makes it encodes the object in the
//     version its own StorageVersion entry reports (its write barrier), so it is no
//     worse than any client's write at that moment; and the migration never counts as
//     complete (the controller compares the StorageVersion again before it marks a
//     migration Succeeded).
//
// A migration created by hand, without the resourceVersion, is held to nothing.
//
// # Checkpoints
//
// After every page Migrate reports a Checkpoint: the counts so far, the first
// failures and where the next page starts. A caller that saves it and passes it back
// to Migrate after a crash resumes after the last reported page; objects of the page
// in flight are seen again and, already rewritten, counted as skipped.
//
// # Usage
//
//	m, err := migrator.New(restConfig, migrator.Options{Concurrency: 16})
//	cp, err := m.Migrate(ctx, migrator.Resource{GroupVersionResource: gvr, Namespaced: true},
//		migrator.Checkpoint{}, func(ctx context.Context, p migrator.PageReport) error {
//			return save(ctx, p.Checkpoint) // an error stops the migration
//		})
//
// The package only talks to the API server through its REST API; it must not import
// the server's packages (objectjson, a JSON codec that knows nothing of the server,
// is not one). The fast path's request and answer are the contract of package wire,
// which the server implements.
package migrator
