// Command concord runs Concord: API servers that make storage-version upgrades,
// rollbacks and migrations safe. `concord server` runs an API server, `concord etcd` a
// standalone etcd member. See README.md.
package main
