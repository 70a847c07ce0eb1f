// Package apiextensions serves apiextensions.k8s.io/v1 CustomResourceDefinitions the way
// Kubernetes does, so that the CRD manifests of real projects apply unchanged and their
// custom resources work: several versions (served, storage, deprecated), names
// acceptance and the NamesAccepted and Established conditions, status.storedVersions,
// structural schemas, status and scale subresources, printer columns, selectable
// fields, None and webhook conversion, and deletion of a definition's custom resources
// before the definition itself.
//
// # What it owns
//
//   - Resource: the registry.Resource of customresourcedefinitions, whose hooks default
//     and validate definitions with k8s.io/apiextensions-apiserver's API-type packages
//     (defaults, validation, helpers), keep status.storedVersions, and whose deletion adds
//     the customresourcecleanup.apiextensions.k8s.io finalizer. New x-kubernetes-validations
//     rules compile in the CEL environment of the server's minimum compatibility
//     version, rules the stored definition has in that of every library (KEP-4330;
//     cel.go).
//   - Definition: the translation of a definition into the registry.Resource of its
//     custom resources. It is the only place that translation happens.
//   - Controller: run by every server, it decides accepted names and conditions, puts
//     established definitions into its server's registry (from where the server
//     serves them, discovery lists them and OpenAPI documents them) and removes them,
//     and cleans up deleted definitions.
//   - The conversion webhook client (a registry.Converter): ConversionReview v1 over
//     HTTPS, one review per list.
//   - Its server wiring (Feature): the Controller with its post-start hooks,
//     publishing definitions through the storage version manager (package
//     storageversion), and start-up waiting, once the stored definitions are served,
//     for the manager's first round of built-in resources.
//
// # What it must not touch
//
// Objects are stored, validated, pruned, defaulted and converted by package registry
// (with package schema); requests are served by package server; OpenAPI documents are
// built by package openapi. This package only produces data for them (Resources) and
// reads and writes definitions and custom resources through registry.Store, never
// etcd. It uses no part of k8s.io/apiextensions-apiserver's server, registry or
// controllers.
//
// # Usage
//
//	reg.Put(ctx, apiextensions.Resource(apiextensions.WithCELCompatibilityVersion(minCompat)))
//	c := apiextensions.NewController(reg, store) // once the server listens
//	go c.Run(ctx)
//	cache.WaitForCacheSync(ctx.Done(), c.HasSynced) // existing definitions are served
//
// A definition created through any server is then served by every server sharing the
// storage within moments: each controller sees it in its watch, the first to write the
// Established condition wins (the writes are preconditioned), and each server puts the
// definition into its own registry when it sees it established.
//
// # Multiple servers
//
// Everything the controllers write is computed from stored objects only, so that they
// agree: names are decided against the names other definitions have accepted (and
// against those requested by older undecided definitions), and a condition's time
// changes only when its status does. A storage version change is picked up by each
// server when its controller sees the new definition; until then that server encodes
// in the previous storage version, which stays in status.storedVersions and decodable.
package apiextensions
