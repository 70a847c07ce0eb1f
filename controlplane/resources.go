package controlplane

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/clusterproxy"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/componentstatus"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/podbinding"
	"github.com/concordproject/concord/podconnect"
	"github.com/concordproject/concord/podeviction"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storageversion"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// configure is the first phase, before anything starts or is written: the
// compatibility configuration (KEP-4330), the built-in resources it selects, and the
// checks of the options that depend on them, so that a start its flags refuse leaves
// etcd as it was.
func (i *Instance) configure(ctx context.Context) (context.Context, error) {
	compat, err := i.opts.Compatibility.Complete(ctx)
	if err != nil {
		return ctx, err
	}
	builtins, err := compat.Resources()
	if err != nil {
		return ctx, err
	}
	if i.opts.FlowControl.Enable && !servesVersion(builtins, flowSchemas, "v1") {
		return ctx, errNoFlowControlAPI
	}
	i.Compatibility, i.parts.builtins = compat, builtins
	return ctx, nil
}

// servesVersion reports whether resources serve gr in version v.
func servesVersion(resources []*registry.Resource, gr schema.GroupResource, v string) bool {
	for _, r := range resources {
		if r.GroupResource() == gr {
			return r.ServedVersion(v) != nil
		}
	}
	return false
}

// buildResources is the resources phase: the compatibility configuration (KEP-4330),
// the registry of the built-in resources it selects and the CRD resource, the object
// store (whose caches run from here on), the authorizer (whose RBAC informers read
// the store from here on), and the server's identity lease, storage version manager
// (KEP-1965, KEP-2339), CRD controller, namespace controllers, watch caches'
// readiness and storage migration, built now because the handler chain and the health
// checks need them; they start with the controllers.
func (i *Instance) buildResources(ctx context.Context) (context.Context, error) {
	o, compat, builtins := i.opts, i.Compatibility, i.parts.builtins
	var err error
	i.Registry = registry.New()
	i.Store = store.NewStore(i.raw)
	i.parts.informers = informers.New(i.Registry, i.Store)
	if i.parts.authz, err = i.newAuthorization(); err != nil {
		return ctx, err
	}
	tokens, err := i.newServiceAccounts()
	if err != nil {
		return ctx, err
	}
	i.runtime = reconcile.NewMetrics(i.Metrics)
	// Before the Services feature, whose kubernetes Service names the servers their
	// identity leases announce.
	if i.parts.identity, err = identity.NewFeature(identity.FeatureConfig{Registry: i.Registry, Store: i.Store,
		Informers: i.parts.informers, Compatibility: compat, ServerID: i.ServerID, Endpoint: i.endpoint,
		Duration: o.IdentityLease.LeaseDuration, RenewInterval: o.IdentityLease.RenewInterval}); err != nil {
		return ctx, err
	}
	if i.parts.services, err = i.newServices(builtins); err != nil {
		return ctx, err
	}
	svcs := i.parts.services.Services()
	gates, err := kubesemantics.NewGates(compat.Versions.Emulation, compat.Versions.MinCompatibility, compat.FeatureGate())
	if err != nil {
		return ctx, err
	}
	i.parts.semantics = kubesemantics.New(gates)
	// The aggregator, which names the aggregated servers that may write StorageVersions,
	// is built in the serving phase, before any request.
	publishers := func(user string) []string {
		if f := i.parts.aggregator; f != nil {
			return f.PublisherGroups(user)
		}
		return nil
	}
	builtins, err = builtin.Configure(builtins, builtin.Options{Services: svcs, Semantics: i.parts.semantics,
		Binder:            podbinding.New(i.Registry, i.Store, i.parts.semantics),
		ComponentStatuses: componentstatus.New(i.client, o.Etcd.Prefix),
		Evictor:           podeviction.New(i.Registry, i.Store),
		Connector:         podconnect.New(i.Registry, i.Store, i.parts.semantics),
		Proxy:             clusterproxy.New(i.Registry, i.Store, svcs.PrimaryIPFamily()),
		EventTTL:          o.EventTTL, Authorization: i.parts.authz, Authentication: i.parts.serving.authn, ServiceAccountTokens: tokens,
		StorageVersions: storageversion.APIOptions{Publishers: publishers,
			Unmaintained: !compat.Enabled(compatibility.StorageVersionAPI)},
	})
	if err != nil {
		return ctx, err
	}
	for _, res := range append(builtins, apiextensions.Resource(apiextensions.WithCELCompatibilityVersion(compat.Versions.MinCompatibility))) {
		if err := i.Registry.Put(ctx, res); err != nil {
			return ctx, fmt.Errorf("registering %s: %w", res.GroupResource(), err)
		}
	}
	if err := o.Store.Apply(i.Store, i.Metrics); err != nil {
		return ctx, err
	}
	for _, c := range []lifecycle.Component{{Name: "namespace-cache", Run: i.Store.RunNamespaces}, {Name: "watch-caches", Run: i.Store.RunWatchCaches}} {
		if err := i.start(ctx, c); err != nil {
			return ctx, err
		}
	}
	// Before the server writes anything of its own, and before it serves.
	if err := identity.CheckJoin(ctx, i.Registry, i.Store, compat.Versions.Binary); err != nil {
		return ctx, err
	}
	if f := i.parts.rbac; f != nil {
		if err := f.Start(ctx, &i.components); err != nil {
			return ctx, err
		}
	}
	if err := i.parts.serviceAccounts.Start(ctx, &i.components); err != nil {
		return ctx, err
	}
	if err := i.buildStorageVersions(compat); err != nil {
		return ctx, err
	}
	i.parts.crds, err = apiextensions.NewFeature(apiextensions.FeatureConfig{Registry: i.Registry, Store: i.Store,
		ReconcileMetrics: i.runtime, NoRatcheting: !compat.Enabled(compatibility.CRDValidationRatcheting),
		StorageVersions: i.parts.storageVersions.Manager()})
	if err != nil {
		return ctx, err
	}
	return ctx, i.buildWithChecks()
}

// buildWithChecks builds the namespace controllers, the watch caches' readiness and
// storage migration, which start with the controllers, now: the health checks list
// their hooks and check.
func (i *Instance) buildWithChecks() error {
	var err error
	i.parts.namespaces, err = namespace.NewFeature(namespace.FeatureConfig{Registry: i.Registry, Store: i.Store, ReconcileMetrics: i.runtime})
	if err != nil {
		return err
	}
	i.parts.storageReadiness = store.NewReadiness(i.Store)
	i.parts.migration, err = migration.NewFeature(migration.FeatureConfig{Disabled: i.opts.DisableStorageMigration,
		Loopback: i.unlimitedLoopback(), Metrics: i.Metrics, ServerID: i.ServerID})
	return err
}

// buildStorageVersions builds, over the identity lease, the storage version manager
// (StorageVersionAPI) with its mirror at the aggregator, and their collector, unless
// their gates are off.
func (i *Instance) buildStorageVersions(compat *compatibility.Config) error {
	id := i.parts.identity
	var err error
	// The mirror publishes the manager's entries: none without the manager.
	var mirror func(context.Context, schema.GroupResource, storageversion.Entry) error
	if id != nil && compat.Enabled(compatibility.StorageVersionAPI) {
		if mirror, err = i.newMirror(); err != nil {
			return err
		}
	}
	sv, err := storageversion.NewFeature(storageversion.FeatureConfig{Identity: id, Compatibility: compat, Loopback: i.LoopbackConfig(),
		Manager: storageversion.Config{Registry: i.Registry, Store: i.Store, Metrics: i.Metrics, ReconcileMetrics: i.runtime,
			Started: i.started, EncryptionKeys: i.Encryption.Keys, Mirror: mirror}})
	if err != nil {
		return err
	}
	i.parts.storageVersions = sv
	return nil
}
