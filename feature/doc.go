// Package feature is what the features of a Concord server share: Server, the one
// context every feature is built with (the registry, the object store, the shared
// informers, the server's own client, its ID, the one election of its elected
// controllers, metrics and compatibility configuration), made once by the composition root, as kube-controller-manager's
// ControllerContext, with CloseIdleLoopback, which hangs up the server's idle
// connections to itself when it stops; and Feature, how the composition root
// handles what each feature's NewFeature returns (its health checks, and Start),
// with the helpers that make a Feature of a component or a function and drop the
// features a server does not run.
//
// It owns these types alone: it builds no feature, imports none, and holds no
// behaviour of the server (what runs, and in which order, is the composition root's).
//
//	quotas, err := quota.NewFeature(srv, o.Quota)
//	crds, err := apiextensions.NewFeature(apiextensions.FeatureConfig{Server: srv, StorageVersions: svm})
//	...
//	for _, f := range feature.Present(crds, quotas, feature.Component(comp)) { // quotas may be nil
//		if err := f.Start(ctx, g); err != nil { ... }
//	}
package feature
