package controlplane

import (
	"context"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/flowcontrol"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/priorityclass"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/versionskew"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// buildLate builds, once the registry holds the built-in resources, the features
// that read it: the storage versions, the CRD and namespace controllers, the watch
// caches' readiness, storage migration, API priority and fairness, the aggregator,
// admission (with quotas), the system priority classes and version skew.
func (fs *features) buildLate(ctx context.Context, c *core, cr *credentials) error {
	var err error
	if err := fs.buildStorageVersions(c); err != nil {
		return err
	}
	if fs.crds, err = apiextensions.NewFeature(apiextensions.FeatureConfig{Registry: c.registry, Store: c.store,
		ReconcileMetrics: c.runtime, NoRatcheting: !c.compat.Enabled(compatibility.CRDValidationRatcheting),
		StorageVersions: fs.storageVersions.Manager()}); err != nil {
		return err
	}
	if fs.namespaces, err = namespace.NewFeature(namespace.FeatureConfig{Registry: c.registry, Store: c.store, ReconcileMetrics: c.runtime}); err != nil {
		return err
	}
	fs.readiness = store.NewReadiness(c.store)
	if fs.migration, err = migration.NewFeature(migration.FeatureConfig{Disabled: c.opts.DisableStorageMigration,
		Loopback: c.loopbackConfig(), Metrics: c.metrics, ServerID: c.id}); err != nil {
		return err
	}
	if fs.flowControl, err = flowcontrol.NewFeature(c.opts.FlowControl, c.served, c.loopbackConfig(), c.runtime); err != nil {
		return err
	}
	if fs.aggregator, err = aggregator.NewFeature(aggregator.FeatureConfig{Registry: c.registry, Informers: c.informers,
		Loopback: c.loopbackConfig(), ReconcileMetrics: c.runtime, ServerID: c.id, ClientCA: cr.cluster.CACert,
		FrontProxyCA: cr.cluster.FrontProxyCACert, ProxyClientCert: cr.proxyCert, ProxyClientKey: cr.proxyKey,
		IdentityLeases: fs.identity.Leases()}); err != nil {
		return err
	}
	if err := fs.buildAdmission(c); err != nil {
		return err
	}
	if fs.priorityClasses, err = priorityclass.NewFeature(priorityclass.FeatureConfig{Registry: c.registry, Loopback: c.loopbackConfig()}); err != nil {
		return err
	}
	fs.versionSkew, err = versionskew.NewFeature(versionskew.FeatureConfig{Registry: c.registry, Informers: c.informers,
		Loopback: c.loopbackConfig(), ServerID: c.id, Metrics: c.metrics, ReconcileMetrics: c.runtime, Log: klog.FromContext(ctx)})
	return err
}

// buildStorageVersions builds, over the identity lease, the storage version manager
// (StorageVersionAPI) with its mirror at the aggregator this server runs behind, and
// their collector, unless their gates are off.
func (fs *features) buildStorageVersions(c *core) error {
	var mirror func(context.Context, schema.GroupResource, storageversion.Entry) error
	if fs.identity != nil && c.compat.Enabled(compatibility.StorageVersionAPI) {
		var err error
		if fs.mirror, mirror, err = newMirror(c); err != nil {
			return err
		}
	}
	var err error
	fs.storageVersions, err = storageversion.NewFeature(storageversion.FeatureConfig{Identity: fs.identity, Compatibility: c.compat,
		Loopback: c.loopbackConfig(), Manager: storageversion.Config{Registry: c.registry, Store: c.store, Metrics: c.metrics,
			ReconcileMetrics: c.runtime, Started: c.started, EncryptionKeys: c.encryption.Keys, Mirror: mirror}})
	return err
}

// buildAdmission builds the admission chain: RBAC's escalation check,
// kube-apiserver's own plugins of built-in resources, the admission policies and
// webhooks whose APIs are served (webhooks' Services resolved by the aggregator, if
// the server is one), then ResourceQuota admission if quotas are served.
func (fs *features) buildAdmission(c *core) error {
	var err error
	if fs.quota, err = quota.NewFeature(quota.FeatureConfig{Registry: c.registry, Store: c.store, Loopback: c.loopbackConfig(),
		ServerID: c.id, ResyncPeriod: c.opts.Quota.SyncPeriod, ReconcileMetrics: c.runtime}); err != nil {
		return err
	}
	chain := admission.Config{Registry: c.registry, RESTConfig: c.loopbackConfig(), ServerID: c.id,
		CELVersion: c.compat.Versions.MinCompatibility, Authorizer: fs.authz,
		MutatingPolicies: c.compat.Enabled(compatibility.MutatingAdmissionPolicy),
		Builtin:          fs.semantics.Admission, FeatureGate: fs.semantics.FeatureGate(), Versions: c.compat.Versions.Effective()}
	if fs.quota != nil {
		chain.Validating = append(chain.Validating, fs.quota.Admission())
	}
	if fs.rbac != nil {
		// Kubernetes checks escalation in RBAC's storage, before any validating admission.
		chain.ValidatingFirst = append(chain.ValidatingFirst, fs.rbac.EscalationCheck(fs.authz))
	}
	if fs.aggregator != nil {
		chain.ServiceResolver = fs.aggregator.ServiceResolver()
	}
	fs.admission, err = admission.NewFeature(admission.FeatureConfig{Chain: chain, ServerID: c.id, ReconcileMetrics: c.runtime})
	return err
}
