// Package trigger keeps every StorageState as the storage-version migration KEP's
// life-cycle says (created ["Unknown"]; a new hash appended and a migration started;
// persisted set to the current hash when a migration succeeds; reset to ["Unknown"]
// when its heartbeat is older than the staleness window), fed by the
// internal.apiserver.k8s.io StorageVersion objects where they are served (watched)
// and by discovery's storageVersionHash elsewhere (polled).
//
// With StorageVersions it is safe during rolling upgrades and rollbacks: while the
// servers disagree (no commonEncodingVersion) nothing starts, running migrations are
// aborted, every reported version joins the persisted list and current is "Unknown";
// a migration counts only if the StorageVersion object is still at the
// resourceVersion it started at, or every revision of it since had the servers agree
// on the migration's version (package guard). The rules are one pure function, plan
// (plan.go);
// Trigger carries them out on the reconcile runtime, one resource per key.
//
// # StorageStates someone else created
//
// The trigger creates the StorageState of every resource it migrates, labelled
// app.kubernetes.io/managed-by=concord-storage-migrator, and deletes such a state
// once its resource is no longer served. A state anyone else creates is never
// deleted: as for any Kubernetes object, what a user creates stays until they delete
// it, and the object says why nothing happens (the server cannot refuse it at
// creation: StorageStates are a CustomResourceDefinition, served alike by Kubernetes,
// whose validation cannot ask what is served). Its condition Tracked is True while
// the trigger follows the resource, and False while it is idle, with the reason:
// ResourceNotServed (no server serves it, e.g. a state written before its definition),
// ResourceNotMigratable, ResourceNotPersisted, AggregatedWithoutStorageVersions or
// ResourceIgnored. Every poll looks at every state, so an idle one is tracked as soon
// as its reason passes (its heartbeat never set, it starts at ["Unknown"]).
//
// # Migrations someone else created
//
// A StorageVersionMigration created by hand (as `concord upgrade-check` prints it:
// generateName <state name>-, spec.resource) is run by the controller like any other.
// The trigger adopts it as its own latest migration of the resource where it would
// otherwise start one, or wait to retry a failed one: it stamps the migration with
// its annotations (the hash, the StorageVersion resourceVersion, the encoding
// version, and its number in migration.concord.io/sequence), and the migration's
// success then sets the persisted hashes to the current one, as its own would (and,
// like its own, it is deleted once --history-limit later ones have ended). It
// adopts only what proves as much as its own migrations do: one it saw created, still
// pending (no status), while the StorageVersion object was at the resourceVersion
// still observed (from discovery: while the hash was already current), that has not
// failed and, once started, resolved the current version. One it never saw pending
// (created while no trigger ran), or that the servers' disagreement interrupted, is
// left alone, and the trigger starts its own. While its own migration runs, or once
// the state is settled, a migration by hand is left alone too.
//
// # Aborting marks a migration Failed; it does not delete it
//
// The KEP's trigger (kube-storage-version-migrator) deletes the migrations it
// replaces. This one marks them Failed, reason StorageVersionsDisagree or
// StorageVersionChanged, with a message, and leaves them to the history limit:
//
//   - storagemigration.k8s.io/v1, the API Kubernetes made GA in 1.37 and Concord
//     serves, ends a migration with a terminal condition that validation keeps for
//     good; the controller stops a migration marked Failed as it stops one deleted,
//     so the abort is as final;
//   - the record stays: kubectl get storageversionmigrations and `concord
//     migrations` show which migration was interrupted, when and why, where a
//     deletion would leave nothing;
//   - a migration created by hand, which the trigger aborts while the servers
//     disagree, is its creator's object, not the trigger's to remove;
//   - the trigger numbers its migrations after the highest number it can see: a
//     deleted one's number, and name, would be used again for another migration.
//
// It is a client of the API server: it writes StorageStates and
// StorageVersionMigrations through the REST API, nothing else.
package trigger
