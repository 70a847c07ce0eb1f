// Package controlplane is the composition root of a Concord API server and owns the
// `concord server` command. It composes; it does not implement: each feature's
// wiring (its components, post-start hooks, informers and handlers) lives in the
// feature's package behind one constructor, NewFeature, built with the context every
// feature shares (feature.Server) and returning a feature.Feature, with Checks and
// Start (rbac, aggregator, service, identity, storageversion, apiextensions, ...).
//
// Start runs the phases in order, each a function that takes what the earlier ones
// returned and returns what it makes, never a shared struct it fills:
//
//	configure    → the compatibility configuration and the built-in resources it selects, checked before anything is started or written
//	startStorage → stored: the embedded etcd or a client of an external cluster, raw storage, the metrics registry
//	loadCredentials → credentials: the listener (its port names the server), server ID, encryption at rest, the cluster CA and admin token shared through etcd, the serving certificate, authentication
//	newCore      → core: the feature.Server every feature is built with (registry, object store, shared informers, loopback client, ID, gates, metrics), and what the phases before it returned
//	buildResources → features: the check that this release may join the servers sharing etcd (identity.CheckJoin), every feature built once (features.go), the registry filled, the caches started
//	startServing → serving: the health checks (the features' hooks, named as kube-apiserver's) and the HTTP server with its handler chain
//	startControllers: the features started, in the one ordered list of controllers.go
//
// Options holds the server's own few flags and one option group per feature (each
// with its AddFlags and Validate, in the feature's package), as kube-apiserver's.
//
// It must not hold behaviour: a rule, a retry or a loop here belongs to a feature.
package controlplane
