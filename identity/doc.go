// Package identity names API servers. Every server sharing an etcd has an ID that is
// stable across its restarts and distinct from its peers'; it names the server's
// identity Lease and its entries in StorageVersion objects.
package identity
