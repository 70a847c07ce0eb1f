// Package compaction keeps etcd's history bounded, as kube-apiserver does: every
// interval, one of the servers sharing an etcd compacts the history older than one
// interval. Without it every write's old value stays in etcd until its database
// reaches its quota, and etcd slows as it grows.
//
// The servers take turns through one etcd key (storage.CompactionKey, the key
// kube-apiservers use): each interval, each server tries to advance the key's version
// from the version it saw one interval earlier; the one that succeeds compacts to the
// revision it saw then, the others learn the new version. So the history of the last
// interval is always kept (watches and paged lists may go back that far), however
// many servers there are, and a server that starts compacts nothing until it has
// waited a whole interval.
//
// It runs on the reconcile runtime: one key, looked at again every interval (a
// failed turn is retried with the runtime's backoff). It owns only the turns and the
// compaction call (storage.Store.CompactStep); it must not read or write objects.
// NewFeature is its server wiring: the Controller as the feature the server starts
// with its controllers (none without an interval).
package compaction
