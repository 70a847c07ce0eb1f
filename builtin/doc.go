// Package builtin gives the built-in resources of the API catalog their Go behaviour,
// one way for all: Configure looks each resource up in one table that names the
// package owning its behaviour, and applies it. Most catalog resources have none
// (they are stored and served as their schemas say).
//
// The behaviours owned elsewhere are applied from here: namespaces (package
// namespace), StorageVersions (package storageversion), StorageVersionMigrations
// (Kubernetes' validation rules of migration/api), PriorityClasses (package
// priorityclass), Services, IPAddresses and ServiceCIDRs (package service). The storage-migration API is
// Concord's own: its definition comes from the manifest of migration/api, not from the
// catalog, and is the same in every release, so that a fleet mixing releases serves,
// stores and decodes it alike.
// The few that no other package owns live here, one file per resource: Events (their
// expiry, the field selectors of core Events, kubectl's columns), Leases (created by
// PUT), Deployments (kubectl's READY column; no controller acts on them), CronJobs
// (the legacy garbage collection default of batch/v1beta1), Jobs (kubectl's columns,
// batch/v1's legacy orphaning default; no controller runs them), ReplicationControllers
// (core/v1's legacy orphaning default), Pods (their graceful
// deletion; their subresources are podbinding's, podeviction's and podconnect's).
// Events' deletions never involve the garbage collector, as in Kubernetes. Their
// defaults and validation are Kubernetes' own (package kubesemantics).
//
// It changes definitions before they go into a registry; it serves and stores
// nothing.
package builtin
