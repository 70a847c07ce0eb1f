// Package storageversion implements KEP-2339 (StorageVersion API) in full: each server
// reports, for every resource it persists, the version it encodes objects in, and no
// server writes objects of a resource in a version it has not reported.
//
// # What it owns
//
//   - The internal.apiserver.k8s.io/v1alpha1 storageversions resource's behaviour
//     (Configure): Table columns, the servers' encryption keys as a status annotation,
//     and writes reserved to the servers' loopback identity and, for the
//     StorageVersions of their groups, to the aggregated servers an APIService names
//     (ConfigureWith; 403 for everyone else). Its validation (names
//     "<group>.<resource>", "core" for the legacy group; the entries) is Kubernetes'
//     own (package kubesemantics).
//   - The Manager, one per server: it writes the server's entry (apiServerID,
//     encodingVersion, decodableVersions, servedVersions) in the StorageVersion of each
//     resource, with commonEncodingVersion and the AllEncodingVersionsEqual condition
//     recomputed on every write. Writes are read-modify-write preconditioned on the
//     object's uid and resourceVersion, conflicts are retried with backoff, failures
//     are retried forever and reported (logs, the post-start hook
//     built-in-resources-storage-version-updater, the barrier's 503 message). It
//     follows the objects, so an entry removed or changed by anyone is written again
//     at once; withdraws the entries of resources the server stops serving; and
//     withdraws all of them on a graceful shutdown (Shutdown).
//   - The write barrier (Manager.Filter): writes to a resource are refused with 503
//     and Retry-After until the server's entry for it is written, except the five
//     kinds of request the KEP lets through.
//   - The custom resource path (Manager.Publish): the CustomResourceDefinition
//     controller publishes a definition through it, so that a new storage version is
//     reported before any custom resource is encoded in it; writes arriving meanwhile
//     wait (bounded) and get 503.
//   - The Collector: a leader-elected (client-go, over a Lease) garbage collector of
//     the entries of servers whose identity lease is gone or expired, of objects left
//     without entries or owner, and of expired identity leases (servers' and
//     controller managers').
//   - Its server wiring (Feature): the collector and, with the StorageVersion API, the
//     manager, built on the server's identity lease (package identity's Feature),
//     started in order, with their post-start hooks; the barrier and the /readyz check
//     through it.
//
// # What it must not touch
//
// It writes StorageVersions and identity leases, nothing else; the identity lease
// itself belongs to package identity. It serves nothing over HTTP but the barrier's
// answers, and knows of CustomResourceDefinitions only as owners of objects.
//
// # Usage
//
// A server builds it through Feature, over the identity lease's Feature:
//
//	f, _ := storageversion.NewFeature(storageversion.FeatureConfig{Server: srv, Identity: id,
//		Manager: storageversion.Config{Started: started, EncryptionKeys: enc.Keys}})
//	// server.Config.StorageVersionBarrier: f.Barrier(); health: f.Checks(), /readyz: f.ReadyChecks()
//	// once serving, with the identity lease written: the collector, then the manager
//	// (which withdraws this server's entries when stopped, before the server stops serving)
//	_ = f.Start(ctx, group)
//	// the CRD controller publishes through f.Manager().Publish, and start-up waits for
//	// f.Manager().WaitFirstRound, then ResourcesSynced once CRDs are served
package storageversion
