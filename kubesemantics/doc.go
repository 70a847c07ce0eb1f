// Package kubesemantics gives built-in resources Kubernetes' own semantics, taken from
// the k8s.io/kubernetes module at the release Concord builds against rather than
// written again: kube's defaults (legacyscheme.Scheme.Default), its conversion
// through the internal version, and, around validation, what kube-apiserver's
// registry strategies do (status reset, generation, fields whose feature gate is off
// dropped), then kube's validation (rest.ValidateCreate and rest.ValidateUpdate: the
// group's validation, metadata's, and declarative validation).
//
// It owns:
//   - the strategies: for each built-in resource it knows, one kind value (one file
//     per API group) whose steps call kube's functions. kube's own strategies
//     (pkg/registry/...) are not imported: they bring k8s.io/apiserver's generic server;
//   - Semantics.Configure, which gives a registry.Resource its registry.Semantics: the
//     typed round trip of an unstructured object (external version, internal version,
//     back) that the store runs on writes; reads never pay it;
//   - kube's conversion between a resource's versions (converter), kube's table
//     columns (printers.go, pkg/printers/internalversion), and server-side apply's
//     types and empty objects from kube's generated OpenAPI (models.go,
//     pkg/generated/openapi);
//   - Gates: a server's Kubernetes feature gates at its emulation and minimum
//     compatibility versions. kube's code reads the process-wide
//     utilfeature.DefaultFeatureGate; this package installs a gate there that
//     answers with the gates of the server whose call is in progress (Gates.Do), so
//     that servers of different releases in one process (the in-process harness)
//     each get their own release's behaviour.
//
// FeatureGates gives package compatibility every gate of kube's code, so that
// --feature-gates takes them.
//
// It must not own the registry, the store or the server's handlers (which call it
// through registry.Semantics), nor the release history of APIs (package catalog).
// Importing it registers kube's feature gates in k8s.io/apiserver's global gate and
// makes client-go's feature gates follow that gate (kube's pkg/features does both).
package kubesemantics
