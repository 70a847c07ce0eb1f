// Package catalog owns the API catalog: the description, as data, of a Concord
// server's built-in APIs and feature gates across a run of Kubernetes releases.
//
// For every built-in resource the catalog gives its names, scope, subresources and
// printer columns, and for every version of it the release that introduced it, the
// release that deprecated it and the one that removed it (each if known), the version
// to move to, and the structural schema of the whole object. For every feature gate it
// gives the versioned specs component-base's feature gates take. The releases it
// describes run from an oldest one to the binary version, the newest.
//
// # What it owns
//
//   - The catalog model (Catalog, Resource, Version, Lifecycle) and its file format
//     (JSON, or YAML for hand-written files), with validation that names every problem
//     by field path: New, Parse, Load, Encode.
//   - The catalog shipped in the binary (Default), written by the generator in ./gen
//     from the Go types of k8s.io/api and their APILifecycle* methods, so that it stays
//     true to Kubernetes' real history. Run `go generate ./catalog` after bumping
//     k8s.io/api; a test fails while default.json is stale. DefaultSummary reads only
//     its releases and feature gate names (Summary), in 2 ms instead of Default's 75:
//     what flag help and a client's announced release need in every process.
//   - Truncate: the catalog as a build of an older release knows it, which is what
//     `--binary-version` gives.
//   - The Converter of catalog resources, which moves fields a target version has no
//     place for into an annotation and back, so that objects round-trip losslessly
//     between any versions.
//   - RegistryResource: the registry.Resource of a catalog resource for a decision
//     (Selection) made elsewhere.
//
// # What it must not touch
//
// The catalog states facts; it decides nothing. Which versions a server serves, which
// one it stores, and how feature gates resolve at an emulation version belong to the
// compatibility package; serving and storing belong to the registry and server
// packages. Catalog resources have no behaviour: no controller acts on them, and their
// conversion only moves fields, never translates them.
//
// # Usage
//
//	c, err := catalog.Default()              // or catalog.Load(path) for --api-catalog
//	if err != nil { ... }
//	if binaryVersion != nil {                // --binary-version
//		c, err = c.Truncate(binaryVersion) // a build of that release
//	}
//	emulation := c.BinaryVersion()
//	for _, r := range c.Resources() {
//		served := func(v *catalog.Version) bool { return v.AvailableAt(emulation) }
//		res, err := r.RegistryResource(catalog.Selection{
//			Served:         served,
//			StorageVersion: storageVersionOf(r), // the compatibility package's choice
//			At:             emulation,
//		})
//		...
//	}
//	gate := featuregate.NewVersionedFeatureGate(emulation)
//	err = gate.AddVersioned(c.FeatureGates())
//
// Schemas are those of the binary's own release for every version, including versions
// that a truncated catalog describes: the schema of a version as it was in an older
// release (before later fields were added) is not recorded.
package catalog
