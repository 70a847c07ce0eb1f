// Package controller runs StorageVersionMigrations to their end with package
// migrator, on the reconcile runtime: progress and checkpoint written to each
// migration after every page, resumed from the checkpoint after a crash, objects that
// cannot be rewritten reported (status, Events, metrics) instead of retried for ever,
// a migration that the trigger aborts or someone deletes stopped, a migration whose
// StorageVersion changed under it (the migrator's rewrites are held to the one the
// trigger recorded, see package migrator) either carried over the change, its guard
// moved forward, when every revision since agreed on its version (package guard), or
// ended Failed with StorageVersionChanged, and
// a CustomResourceDefinition's status.storedVersions trimmed to its storage version
// after success.
//
// # Where the progress goes
//
// Concord's definition of the API (Concord's server, or the CustomResourceDefinition
// the controller manager installs) keeps status.progress, and its printer columns
// show the counts. Kubernetes' built-in API keeps only status.conditions and
// status.resourceVersion, and drops anything else written to the status with an
// "unknown field" warning: there (Config.ProgressInAnnotation) the progress goes to
// the AnnotationProgress annotation instead, and nothing is written to the status
// that the server does not keep. The Running condition's message repeats the counts
// either way. ProgressOf reads the progress from wherever it is.
//
// It is a client of the API server: it reads and writes through the REST API only.
package controller
