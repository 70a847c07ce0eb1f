// Package discovery caches what an API server serves, as the storage-migration
// controllers need it: for each resource its preferred group-version, kind, scope,
// storage version hash (legacy discovery publishes it) and whether it can be listed
// and updated. The trigger reads hashes from it where StorageVersions are not served;
// the controller resolves the version a migration lists and writes in.
//
// ProbeMigrationAPI tells what serves the StorageVersionMigration API itself: nothing,
// Concord's definition (which keeps status.progress), or a built-in API such as
// Kubernetes' (which keeps only conditions and resourceVersion and shadows a
// definition of the same group-version).
//
// It talks to the server only through client-go's discovery client (and its REST
// client, for the probe's one Table).
package discovery
