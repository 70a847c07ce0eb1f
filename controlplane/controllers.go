package controlplane

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/compaction"
	"github.com/concordproject/concord/garbagecollector"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/storageprotection"
	"github.com/concordproject/concord/versionskew"
	"github.com/google/uuid"
	"k8s.io/klog/v2"
)

// startControllers is the controllers phase: the system namespaces, the identity
// lease, the storage version garbage collector and manager, the CRD controller
// (start-up waits until it serves every stored definition, and until every built-in
// resource had one registration attempt), admission and the ValidatingAdmissionPolicy
// status controller, priority and fairness, the bootstrap roles and the ClusterRole
// aggregation controller, the system priority classes, quotas, the version skew
// controller, etcd's compaction, the namespace and storage protection controllers, the garbage collector and
// storage migration.
// The last component, started last and so stopped first, turns /readyz off when the
// server begins to stop.
func (i *Instance) startControllers(ctx context.Context) (context.Context, error) {
	// The informers started before serving (RBAC, service accounts) have synced: their
	// components are ready.
	i.finish(hookInformers)
	if err := i.start(ctx, lifecycle.Component{Name: "ready-for-writes", Run: i.parts.readyGate.Run}); err != nil {
		return ctx, err
	}
	if err := i.parts.namespaces.Start(ctx, &i.components); err != nil {
		return ctx, err
	}
	if err := i.startIdentity(ctx); err != nil {
		return ctx, err
	}
	if err := i.startMirror(ctx); err != nil {
		return ctx, err
	}
	if err := i.parts.crds.Start(ctx, &i.components); err != nil {
		return ctx, err
	}
	if err := i.startAdmission(ctx); err != nil {
		return ctx, err
	}
	if err := i.startTypeChecking(ctx); err != nil {
		return ctx, err
	}
	if fc := i.parts.flowControl; fc != nil {
		// Ready once it has read the configuration and written the bootstrap one.
		if err := i.start(ctx, lifecycle.Component{Name: "priority-and-fairness", Run: fc.Run, Ready: fc.Ready}); err != nil {
			return ctx, fmt.Errorf("starting API priority and fairness: %w", err)
		}
	}
	if err := i.startBootstrapRoles(ctx); err != nil {
		return ctx, err
	}
	if err := i.parts.priorityClasses.Start(ctx, &i.components); err != nil {
		return ctx, err
	}
	if err := i.parts.services.Start(ctx, &i.components); err != nil {
		return ctx, err
	}
	if err := i.startAggregator(ctx); err != nil {
		return ctx, fmt.Errorf("starting the aggregator: %w", err)
	}
	if err := i.parts.quota.Start(ctx, &i.components); err != nil {
		return ctx, err
	}
	if err := i.startVersionSkew(ctx); err != nil {
		return ctx, err
	}
	if err := i.startCleanup(ctx); err != nil {
		return ctx, err
	}
	if f := i.parts.migration; f != nil {
		if err := f.Start(ctx, &i.components); err != nil {
			return ctx, err
		}
	}
	if err := i.parts.storageReadiness.Start(ctx, &i.components); err != nil {
		return ctx, err
	}
	return ctx, i.start(ctx, closer("readiness", i.parts.checks.ShuttingDown))
}

// startAdmission starts the admission chain; ready once it has read what its
// plugins read (policies, webhooks, and the objects kube's plugins look up).
func (i *Instance) startAdmission(ctx context.Context) error {
	if err := i.start(ctx, lifecycle.Component{Name: "admission", Run: i.parts.admission.Run, Ready: i.parts.admission.Ready}); err != nil {
		return fmt.Errorf("starting admission: %w", err)
	}
	i.parts.informerChecks = append(i.parts.informerChecks, i.parts.admission.Ready)
	i.finish(hookAdmission)
	return nil
}

// startVersionSkew builds and starts the version skew controller (none where its
// resources are not served).
func (i *Instance) startVersionSkew(ctx context.Context) error {
	skew, err := versionskew.NewFeature(versionskew.FeatureConfig{Registry: i.Registry, Informers: i.parts.informers,
		Loopback: i.unlimitedLoopback(), ServerID: i.ServerID, Metrics: i.Metrics, ReconcileMetrics: i.runtime, Log: klog.FromContext(ctx)})
	if err != nil {
		return err
	}
	return skew.Start(ctx, &i.components)
}

// startCleanup starts the controllers that remove what is no longer needed, in
// this order: etcd's compaction of its old history (unless
// --etcd-compaction-interval=0), the namespace controller, the storage protection
// controller, and the garbage collector.
func (i *Instance) startCleanup(ctx context.Context) error {
	if iv := i.opts.Etcd.CompactionInterval; iv > 0 {
		if err := i.start(ctx, compaction.NewComponent(i.raw, iv, i.runtime, i.Metrics)); err != nil {
			return err
		}
	}
	if err := i.parts.namespaces.StartController(ctx, &i.components); err != nil {
		return err
	}
	protection, err := storageprotection.NewComponent(i.Registry, i.Store, i.runtime)
	if err != nil {
		return err
	}
	if err := i.start(ctx, protection); err != nil {
		return err
	}
	gc, err := garbagecollector.NewComponent(garbagecollector.ComponentConfig{
		Registry: i.Registry, Store: i.Store, Loopback: i.unlimitedLoopback(), ServerID: i.ServerID,
		IdentityLeaseDuration: i.opts.IdentityLease.LeaseDuration, ReconcileMetrics: i.runtime,
	})
	if err != nil {
		return err
	}
	return i.start(ctx, gc)
}

// startAggregator starts the aggregator, if the server is one.
func (i *Instance) startAggregator(ctx context.Context) error {
	if f := i.parts.aggregator; f != nil {
		return f.Start(ctx, &i.components)
	}
	return nil
}

// startIdentity starts the identity lease (ready once written) and the informer of
// every server's, then the garbage collector of storage versions and identity leases,
// and the storage version manager. Stopped in the reverse order, the manager withdraws
// this server's entries, the collector gives its leadership up, and the lease is
// deleted, while the server still serves.
func (i *Instance) startIdentity(ctx context.Context) error {
	if i.parts.identity == nil {
		return nil
	}
	if err := i.parts.identity.Start(ctx, &i.components); err != nil {
		return err
	}
	return i.parts.storageVersions.Start(ctx, &i.components)
}

// startTypeChecking starts the ValidatingAdmissionPolicy status controller (their
// status.typeChecking), elected among the servers, if the policies are served.
func (i *Instance) startTypeChecking(ctx context.Context) error {
	if i.Registry.Served(admission.ValidatingPoliciesGR, "v1") == nil {
		return nil
	}
	tc, err := admission.NewTypeChecking(admission.TypeCheckingConfig{
		RESTConfig: i.LoopbackConfig(), Holder: i.ServerID + "_" + uuid.NewString(), ReconcileMetrics: i.runtime,
	})
	if err != nil {
		return err
	}
	if err := i.start(ctx, lifecycle.Component{Name: "validatingadmissionpolicy-status", Run: tc.Run}); err != nil {
		return fmt.Errorf("starting the ValidatingAdmissionPolicy status controller: %w", err)
	}
	return nil
}
