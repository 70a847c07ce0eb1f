// Package discovery caches what an API server serves, as the storage-migration
// controllers need it: for each resource its preferred group-version, kind, scope,
// storage version hash (legacy discovery publishes it) and whether it can be listed
// and updated. The trigger reads hashes from it where StorageVersions are not served;
// the controller resolves the version a migration lists and writes in.
//
// It talks to the server only through client-go's discovery client.
package discovery
