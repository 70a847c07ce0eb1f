// Package admission owns the server's admission chain: what runs on every write after
// the object is decoded and before it is stored, as Kubernetes' API server runs it.
//
//   - Mutating admission runs first, on creations and updates, before the store
//     prepares and validates the object: MutatingAdmissionPolicies
//     (admissionregistration.k8s.io/v1), with ApplyConfiguration and JSONPatch
//     mutations, reinvoked once if a mutation changed what an earlier one saw.
//   - Validating admission runs after validation, inside the store's write, before
//     etcd: ValidatingAdmissionPolicies (Deny, Warn and Audit actions), then the
//     ResourceQuota admission of package quota.
//
// The policy plugins are k8s.io/apiserver's (pkg/admission/plugin/policy), fed by
// informers over the server's loopback client and given the registry's objects
// (registry.Objects: conversion between versions, defaulting, equivalent resources)
// and the server's authorizer. A policy plugin is assembled only if its API is served.
// The type converters mutations apply with are the registry's server-side apply types
// (openapi.TypeConverter), never fetched over HTTP.
//
// # What it must not touch
//
// It decides; it does not write objects or serve HTTP. The server builds the
// admission attributes of a request and calls Admit and Validate where the store lets
// it (store.WriteOptions.Mutate and Admit).
package admission
