package controlplane

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/compaction"
	"github.com/concordproject/concord/garbagecollector"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/storageprotection"
)

// startControllers is the controllers phase: the features' components, in this
// order, each started (and ready, where it says when) before the next:
//
//   - the gate that holds clients' writes until the server is ready;
//   - the system namespaces (the identity lease needs kube-system);
//   - the identity lease, the storage version collector and manager, and the
//     publisher of the entries at an aggregator;
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
	protection, err := storageprotection.NewComponent(c.registry, c.store, c.runtime)
	if err != nil {
		return err
	}
	gc, err := garbagecollector.NewComponent(garbagecollector.ComponentConfig{Registry: c.registry, Store: c.store,
		Loopback: c.loopbackConfig(), ServerID: c.id, IdentityLeaseDuration: c.opts.IdentityLease.LeaseDuration, ReconcileMetrics: c.runtime})
	if err != nil {
		return err
	}
	var compact, mirror feature
	if iv := c.opts.Etcd.CompactionInterval; iv > 0 {
		compact = component(compaction.NewComponent(c.raw, iv, c.runtime, c.metrics))
	}
	if fs.mirror != nil {
		// Keeps the identity lease and the entries at the aggregator until the server
		// stops, then withdraws them.
		mirror = component(lifecycle.Component{Name: "aggregator-storage-versions", Run: fs.mirror.Run})
	}
	for _, f := range present(component(lifecycle.Component{Name: "ready-for-writes", Run: sv.gate.Run}),
		fs.namespaces, fs.identity, fs.storageVersions, mirror, fs.crds, fs.admission, fs.flowControl, fs.roles,
		fs.priorityClasses, fs.services, aggregatorFeature(fs), fs.quota, fs.versionSkew,
		compact, starter(fs.namespaces.StartController), component(protection), component(gc),
		fs.migration, fs.readiness, component(closer("readiness", sv.checks.ShuttingDown))) {
		if err := f.Start(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// starter is a feature that starts its components with a function, and has no
// checks of its own.
type starter func(ctx context.Context, g *lifecycle.Group) error

func (s starter) Checks() []health.Checker                            { return nil }
func (s starter) Start(ctx context.Context, g *lifecycle.Group) error { return s(ctx, g) }

// component is the feature of one component and no checks.
func component(comp lifecycle.Component) feature {
	return starter(func(ctx context.Context, g *lifecycle.Group) error { return g.Start(ctx, comp) })
}

// aggregatorFeature starts the aggregator, if the server is one.
func aggregatorFeature(fs *features) feature {
	if fs.aggregator == nil {
		return nil
	}
	return starter(func(ctx context.Context, g *lifecycle.Group) error {
		if err := fs.aggregator.Start(ctx, g); err != nil {
			return fmt.Errorf("starting the aggregator: %w", err)
		}
		return nil
	})
}
