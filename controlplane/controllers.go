package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/garbagecollector"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storageversion"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
)

// errNotSynced: the CRD controller has not served every stored definition yet.
var errNotSynced = errors.New("the stored CustomResourceDefinitions are not all served yet")

// startControllers is the controllers phase: the bootstrap namespaces, the identity
// lease, the storage version garbage collector and manager, the CRD controller
// (start-up waits until it serves every stored definition, and until every built-in
// resource had one registration attempt), admission and the ValidatingAdmissionPolicy
// status controller, priority and fairness, the bootstrap roles and the ClusterRole
// aggregation controller, quotas, the version skew controller, the namespace
// controller, the garbage collector and storage migration. The last component, started
// last and so stopped first, turns /readyz off when the server begins to stop.
func (i *Instance) startControllers(ctx context.Context) (context.Context, error) {
	if err := bootstrapNamespaces(ctx, i); err != nil {
		return ctx, err
	}
	if err := i.startIdentity(ctx); err != nil {
		return ctx, err
	}
	if err := i.startMirror(ctx); err != nil {
		return ctx, err
	}
	svm := i.parts.svm
	crds, err := apiextensions.NewController(i.Registry, i.Store, i.runtime)
	if err != nil {
		return ctx, err
	}
	if svm != nil {
		crds.Publish = svm.Publish
	}
	crds.NoRatcheting = !i.Compatibility.Enabled(compatibility.CRDValidationRatcheting)
	if err := i.start(ctx, lifecycle.Component{Name: "crd-controller", Run: crds.Run, Ready: func() error {
		if !crds.HasSynced() {
			return errNotSynced
		}
		return nil
	}}); err != nil {
		return ctx, fmt.Errorf("serving the stored CustomResourceDefinitions: %w", err)
	}
	if svm != nil {
		// Every built-in resource has had one registration attempt: writes to those
		// registered pass; the others stay refused (and readyz says why) while their
		// registration is retried.
		if err := svm.WaitFirstRound(ctx); err != nil {
			return ctx, fmt.Errorf("registering storage versions: %w", err)
		}
		if err := svm.ResourcesSynced(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot withdraw the storage version entries of resources this server no longer serves; they stay until it restarts")
		}
	}
	i.parts.bootstrap.Done()
	if err := i.start(ctx, lifecycle.Component{Name: "admission", Run: i.parts.admission.Run, Ready: i.parts.admission.Ready}); err != nil {
		return ctx, fmt.Errorf("starting admission: %w", err)
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
	if err := i.bootstrapRBAC(ctx); err != nil {
		return ctx, err
	}
	if err := i.startAggregation(ctx); err != nil {
		return ctx, fmt.Errorf("starting the aggregator: %w", err)
	}
	if err := i.startQuota(ctx); err != nil {
		return ctx, err
	}
	if err := i.startVersionSkew(ctx); err != nil {
		return ctx, err
	}
	namespaces, err := namespace.NewController(i.Registry, i.Store, i.runtime)
	if err != nil {
		return ctx, err
	}
	if err := i.start(ctx, lifecycle.Component{Name: "namespace-controller", Run: namespaces.Run}); err != nil {
		return ctx, err
	}
	if err := i.startGarbageCollector(ctx); err != nil {
		return ctx, err
	}
	if !i.opts.DisableStorageMigration {
		// Leader-elected among the servers: one of them triggers and runs migrations.
		if err := i.start(ctx, lifecycle.Component{Name: "storage-migration", Run: func(ctx context.Context) error {
			// The candidate's identity starts with the server's, so that operators (and
			// the safety suite) see which server leads.
			le := migration.LeaderElection{Identity: i.ServerID + "_" + uuid.NewString()}
			return migration.Run(ctx, migration.Config{RESTConfig: i.LoopbackConfig(), Metrics: i.Metrics, LeaderElection: le, Installed: i.parts.migration.set})
		}}); err != nil {
			return ctx, err
		}
	}
	return ctx, i.start(ctx, closer("readiness", i.parts.checks.ShuttingDown))
}

// startQuota starts ResourceQuota admission (ready once it has read the quotas) and
// the usage controller, leader-elected among the servers.
func (i *Instance) startQuota(ctx context.Context) error {
	if i.parts.quota == nil {
		return nil
	}
	if err := i.start(ctx, lifecycle.Component{Name: "resourcequota-admission", Run: i.parts.quota.Run, Ready: i.parts.quota.Ready}); err != nil {
		return fmt.Errorf("starting resource quota admission: %w", err)
	}
	usage, err := quota.NewController(quota.ControllerConfig{
		Registry: i.Registry, Store: i.Store, RESTConfig: i.LoopbackConfig(),
		Holder: i.ServerID + "_" + uuid.NewString(), ResyncPeriod: i.opts.ResourceQuotaSyncPeriod, ReconcileMetrics: i.runtime,
	})
	if err != nil {
		return err
	}
	return i.start(ctx, lifecycle.Component{Name: "resourcequota-controller", Run: usage.Run})
}

// startGarbageCollector starts the garbage collector, leader-elected among the
// servers. Its election is timed from the identity lease duration, as the storage
// version collector's: half of it (whole seconds, at least one), renewed within two
// thirds of that, retried every sixth (15s, 10s and 2.5s by default).
func (i *Instance) startGarbageCollector(ctx context.Context) error {
	lease := max(time.Second, (i.opts.IdentityLeaseDuration / 2).Truncate(time.Second))
	gc, err := garbagecollector.New(garbagecollector.Config{
		Registry: i.Registry, Store: i.Store, RESTConfig: i.LoopbackConfig(), Holder: i.ServerID + "_" + uuid.NewString(),
		LeaseDuration: lease, RenewDeadline: lease * 2 / 3, RetryPeriod: lease / 6, ReconcileMetrics: i.runtime,
	})
	if err != nil {
		return err
	}
	return i.start(ctx, lifecycle.Component{Name: "garbage-collector", Run: gc.Run})
}

// startIdentity starts the identity lease (ready once written), the garbage collector
// of storage versions and identity leases, and the storage version manager. Stopped
// in the reverse order, the manager withdraws this server's entries, the collector
// gives its leadership up, and the lease is deleted, while the server still serves.
func (i *Instance) startIdentity(ctx context.Context) error {
	lease, svm := i.parts.lease, i.parts.svm
	if lease == nil {
		return nil
	}
	if err := i.start(ctx, lifecycle.Component{Name: "identity-lease", Run: lease.Run, Ready: lease.Ready}); err != nil {
		return err
	}
	i.parts.leaseHook.Done()
	collector, err := storageversion.NewCollector(storageversion.CollectorConfig{
		Registry: i.Registry, Store: i.Store, Holder: lease.HolderIdentity(), RESTConfig: i.LoopbackConfig(),
		LeaseDuration: lease.Duration(), Metrics: i.Metrics, ReconcileMetrics: i.runtime,
	})
	if err != nil {
		return err
	}
	if err := i.start(ctx, lifecycle.Component{Name: "storage-version-gc", Run: collector.Run}); err != nil {
		return err
	}
	i.parts.collectorHook.Done()
	if svm == nil {
		return nil
	}
	return i.start(ctx, lifecycle.Component{Name: "storage-versions", Run: svm.Run})
}

// bootstrapNamespaces creates the namespaces every Kubernetes cluster has.
func bootstrapNamespaces(ctx context.Context, i *Instance) error {
	res := i.Registry.Get(namespace.GroupResource)
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
		obj.SetName(name)
		if _, err := i.Store.Create(ctx, store.Ref{Resource: res, Version: "v1"}, obj, store.WriteOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// startTypeChecking starts the ValidatingAdmissionPolicy status controller (their
// status.typeChecking), elected among the servers, if the policies are served.
func (i *Instance) startTypeChecking(ctx context.Context) error {
	if res := i.Registry.Get(admission.ValidatingPoliciesGR); res == nil || res.ServedVersion("v1") == nil {
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
