// Package migration migrates stored objects to their resource's current storage
// version, by itself, safely while API servers of different versions run side by
// side, and tells the operator what it did.
//
// # What it owns
//
//   - The APIs (package crds holds their manifests): migration.k8s.io/v1alpha1
//     StorageState, one per resource, named <resource>.<group>, recording which
//     storage version hashes objects may be encoded in; storagemigration.k8s.io/v1
//     StorageVersionMigration, the request to rewrite one resource, with Concord's
//     status.progress (counts, the first failures with names and reasons, the
//     checkpoint). EnsureCRDs installs the definitions on Concord and Kubernetes;
//     ExtendStorageVersionMigration adds status.progress, and Kubernetes' validation
//     (required and immutable spec, write-once status.resourceVersion, final
//     Succeeded and Failed conditions), to Concord's built-in
//     StorageVersionMigration. The controllers' own status writes obey it.
//   - The trigger: it keeps every StorageState as the storage-version migration KEP's
//     life-cycle says (created ["Unknown"]; a new hash appended and a migration
//     started; persisted set to the current hash when a migration succeeds; reset to
//     ["Unknown"] when its heartbeat is older than the staleness window), fed by the
//     internal.apiserver.k8s.io StorageVersion objects where they are served
//     (watched) and by discovery's storageVersionHash elsewhere (polled). With
//     StorageVersions it is safe during rolling upgrades and rollbacks: while the
//     servers disagree (no commonEncodingVersion) nothing starts, running migrations
//     are aborted, every reported version joins the persisted list and current is
//     "Unknown"; a migration counts only if the StorageVersion object is still at the
//     resourceVersion it started at. The rules are one pure function (plan).
//   - The migration controller: it runs every StorageVersionMigration that has not
//     ended with package migrator (the server-side fast path on Concord, the
//     client-side path elsewhere), writes progress and checkpoint after every page,
//     resumes from the checkpoint after a crash, reports objects that cannot be
//     rewritten (status, Events, metrics) instead of retrying them for ever, and
//     trims a CustomResourceDefinition's status.storedVersions to its storage version
//     after success.
//   - Run (leader-elected over a Lease), `concord controller-manager` (NewCommand),
//     `concord migrations` (NewMigrationsCommand, PrintMigrations) and the Prometheus
//     metrics concord_storage_migration_*.
//
// # What it must not touch
//
// It is a client of the API server, Concord's or Kubernetes', and nothing else: it
// reads and writes through the REST API only (no registry.Store, no etcd), so that
// what runs in-process in `concord server` runs unchanged against any cluster. It
// writes StorageStates, StorageVersionMigrations, the status of
// CustomResourceDefinitions (storedVersions only), its leader Lease and Events; it
// rewrites other objects only as they are, through the server. StorageVersion
// objects are the servers' (package storageversion): it only reads them.
//
// # Usage
//
// In-process, with the server's own identity:
//
//	go migration.Run(ctx, migration.Config{RESTConfig: inst.LoopbackConfig(), Metrics: inst.Metrics})
//
// Against any cluster: `concord controller-manager --kubeconfig admin.kubeconfig`.
// What happened: `concord migrations --watch`, or kubectl get storagestates,
// storageversionmigrations. To migrate a resource by hand, create a
// StorageVersionMigration naming it; the controller runs it like the trigger's own.
package migration
