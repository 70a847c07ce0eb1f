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
// resourceVersion it started at. The rules are one pure function, plan (plan.go);
// Trigger carries them out on the reconcile runtime, one resource per key.
//
// It is a client of the API server: it writes StorageStates and
// StorageVersionMigrations through the REST API, nothing else.
package trigger
