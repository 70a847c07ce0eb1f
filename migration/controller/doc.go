// Package controller runs StorageVersionMigrations to their end with package
// migrator, on the reconcile runtime: progress and checkpoint written to each
// migration's status after every page, resumed from the checkpoint after a crash,
// objects that cannot be rewritten reported (status, Events, metrics) instead of
// retried for ever, a migration that the trigger aborts or someone deletes stopped, a
// migration whose StorageVersion changed under it (the migrator's rewrites are held to
// the one the trigger recorded, see package migrator) ended Failed with
// StorageVersionChanged,
// and a CustomResourceDefinition's status.storedVersions trimmed to its storage
// version after success.
//
// It is a client of the API server: it reads and writes through the REST API only.
package controller
