// Package migration migrates stored objects to their resource's current storage
// version, by itself, safely while API servers of different versions run side by
// side, and tells the operator what it did.
//
// # What it owns, package by package
//
//   - api: the APIs: migration.k8s.io/v1alpha1 StorageState, one per resource, named
//     <resource>.<group>, recording which storage version hashes objects may be
//     encoded in; storagemigration.k8s.io/v1 StorageVersionMigration, the request to
//     rewrite one resource, with Concord's status.progress (counts, the first
//     failures with names and reasons, the checkpoint); Kubernetes' validation of
//     StorageVersionMigration; the definitions' manifests.
//   - trigger: keeps every StorageState as the KEP's life-cycle says and starts
//     migrations, from StorageVersion objects where they are served (safe during
//     rolling upgrades and rollbacks) and from discovery elsewhere.
//   - controller: runs every StorageVersionMigration that has not ended with package
//     migrator, writing progress and checkpoint after every page, resuming after a
//     crash, reporting objects that cannot be rewritten, trimming a CRD's
//     status.storedVersions after success.
//   - migrator: rewrites the objects (the server-side fast path on Concord, the
//     client-side path elsewhere).
//   - discovery: what the server serves, with storage version hashes.
//   - this package: Run (leader-elected over a Lease; EnsureCRDs installs the
//     definitions first), `concord controller-manager` (NewCommand) and `concord
//     migrations` (NewMigrationsCommand, PrintMigrations), and its wiring in `concord
//     server` (Feature: Run as a component of the server, and the readyz check
//     DefinitionsCheck).
//
// # What it must not touch
//
// It is a client of the API server, Concord's or Kubernetes', and nothing else: it
// reads and writes through the REST API only (no registry.Store, no etcd), so that
// what runs in-process in `concord server` runs unchanged against any cluster. It
// writes StorageStates, StorageVersionMigrations, the status of
// CustomResourceDefinitions (storedVersions only), its leader Lease and Events; it
// rewrites other objects only as they are, through the server. StorageVersion
// objects are the servers' (package storageversion): it only reads them. The server
// side of these APIs (the built-in StorageVersionMigration's validation) is package
// builtin's, built on package api.
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
