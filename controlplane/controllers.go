package controlplane

import (
	"context"

	"github.com/concordproject/concord/compaction"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/garbagecollector"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/storageprotection"
)

// startControllers is the controllers phase: the features' components, in this
// order, each started (and ready, where it says when) before the next:
//
//   - what closes the server's idle connections to itself once every other
//     controller has stopped (feature.Server.CloseIdleLoopback);
//   - the gate that holds clients' writes until the server is ready;
//   - the system namespaces (the identity lease needs kube-system);
//   - the identity lease, then the election of the elected controllers below (which
//     all run through it, so that it stops after them and before the identity
//     lease), the storage version collector and manager, and the publisher of the
//     entries at an aggregator;
//   - the CRD controller (start-up waits until it serves every stored definition,
//     and until every built-in resource had one storage version registration
//     attempt);
//   - admission and the ValidatingAdmissionPolicy status controller, priority and
//     fairness, the bootstrap roles and the ClusterRole aggregation controller, the
//     system priority classes, Services' controllers and the kubernetes Service, the
//     aggregator, quotas, the version skew controller;
//   - what removes what is no longer needed: etcd's compaction, the namespace and
//     storage protection controllers, the garbage collector;
//   - storage migration, the watch caches' readiness.
//
// The last component, started last and so stopped first, turns /readyz off when the
// server begins to stop.
func startControllers(ctx context.Context, g *lifecycle.Group, c *core, fs *features, sv *serving) error {
	// The informers started before serving (RBAC, service accounts) have synced.
	sv.informersHook.Done()
	var mirror feature.Feature
	if fs.mirror != nil {
		// Keeps the identity lease and the entries at the aggregator until the server
		// stops, then withdraws them.
		mirror = feature.Component(lifecycle.Component{Name: "aggregator-storage-versions", Run: fs.mirror.Run})
	}
	for _, f := range feature.Present(feature.Component(lifecycle.Closer("loopback-connections", c.CloseIdleLoopback)),
		feature.Component(lifecycle.Component{Name: "ready-for-writes", Run: sv.gate.Run}),
		fs.namespaces, fs.identity, feature.Component(lifecycle.Component{Name: "controllers-election", Run: c.election.Run}),
		fs.storageVersions, mirror, fs.crds, fs.admission, fs.flowControl, fs.rbac.Roles(),
		fs.priorityClasses, fs.services, fs.aggregator, fs.quota, fs.versionSkew,
		compaction.NewFeature(c.st.raw, c.opts.Etcd.CompactionInterval, c.ReconcileMetrics, c.Metrics),
		feature.Func(fs.namespaces.StartController), storageprotection.NewFeature(c.Server),
		garbagecollector.NewFeature(c.Server),
		fs.migration, fs.readiness, feature.Component(lifecycle.Closer("readiness", sv.checks.ShuttingDown))) {
		if err := f.Start(ctx, g); err != nil {
			return err
		}
	}
	return nil
}
