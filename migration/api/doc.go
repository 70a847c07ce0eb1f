// Package api is the storage-migration API as clients and servers share it: the Go
// types of migration.k8s.io/v1alpha1 StorageState and of storagemigration.k8s.io/v1
// StorageVersionMigration with Concord's status.progress; their names, conditions
// (a migration's Running, Succeeded and Failed; a StorageState's Tracked), reasons,
// labels and annotations; Kubernetes' validation rules of StorageVersionMigration,
// as pure functions over unstructured objects; and the CustomResourceDefinition
// manifests of both, embedded (the YAML files beside this one are the only definition
// of their schemas).
//
// It does no I/O and imports nothing of the server: the migration controllers (a
// client of any API server) and the server that serves these APIs both build on it.
package api
