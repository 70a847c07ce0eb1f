// Package admission owns the server's admission chain: what runs on every write after
// the object is decoded and before it is stored, as Kubernetes' API server runs it.
//
//   - Mutating admission runs first, on creations and updates, before the store
//     prepares and validates the object: MutatingAdmissionPolicies
//     (admissionregistration.k8s.io/v1), with ApplyConfiguration and JSONPatch
//     mutations, then mutating webhooks (MutatingWebhookConfigurations); the chain
//     runs once more if a mutation changed what a policy or webhook with
//     reinvocationPolicy IfNeeded saw.
//   - Validating admission runs after validation, inside the store's write, before
//     etcd: RBAC's escalation check, ValidatingAdmissionPolicies (Deny, Warn and Audit
//     actions), validating webhooks (ValidatingWebhookConfigurations), then the
//     ResourceQuota admission of package quota.
//   - Deletions pass both, with the object as stored as the old object.
//
// The policy and webhook plugins are k8s.io/apiserver's (pkg/admission/plugin/policy
// and plugin/webhook), fed by informers over the server's loopback client and given
// the registry's objects (registry.Objects: conversion between versions, defaulting,
// equivalent resources) and the server's authorizer. A plugin is assembled only if
// its API is served. The type converters mutations apply with are the registry's
// server-side apply types (openapi.TypeConverter), never fetched over HTTP. Webhooks'
// Services are resolved by the resolver the server gives (the aggregator's, through
// EndpointSlices).
//
// It also owns kubectl's WEBHOOKS column of webhook configurations (Configurers) and
// the ValidatingAdmissionPolicy status controller (TypeChecking), elected among the
// servers, that writes status.typeChecking. The validation of webhook
// configurations, policies and bindings, their CEL expressions compiled at the
// server's minimum compatibility version (KEP-4330: new expressions with its
// libraries only, stored ones with every library), is Kubernetes' (package
// kubesemantics).
//
// # What it must not touch
//
// It decides; it does not serve HTTP, and it writes nothing but policies' status.
// The server builds the admission attributes of a request and calls Admit and
// Validate where the store lets it (store.WriteOptions.Mutate and Admit).
package admission
