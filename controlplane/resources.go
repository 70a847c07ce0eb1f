package controlplane

import (
	"context"
	"fmt"
	"os"

	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/clusterproxy"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/componentstatus"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/podbinding"
	"github.com/concordproject/concord/podconnect"
	"github.com/concordproject/concord/podeviction"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/registry/watchcache"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
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
	if i.opts.EnablePriorityAndFairness && !servesVersion(builtins, flowSchemas, "v1") {
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
// the store from here on), and the server's identity lease and storage
// version manager (KEP-1965, KEP-2339), built now because the handler chain and the
// health checks need them; they start with the controllers.
func (i *Instance) buildResources(ctx context.Context) (context.Context, error) {
	o, compat, builtins := i.opts, i.Compatibility, i.parts.builtins
	var err error
	i.Registry = registry.New()
	i.Store = store.NewStore(i.raw)
	i.parts.informers = informers.New(i.Registry, i.Store)
	if i.parts.authz, err = i.newAuthorization(); err != nil {
		return ctx, err
	}
	tokens, err := i.newServiceAccountTokens(i.parts.serving.serviceAccountKey)
	if err != nil {
		return ctx, err
	}
	i.runtime = reconcile.NewMetrics(i.Metrics)
	i.parts.identityLeases = i.newIdentityLeases(compat)
	if i.parts.services, err = i.newServices(builtins); err != nil {
		return ctx, err
	}
	svcs := i.parts.services.Services()
	gates, err := kubesemantics.NewGates(compat.Versions.Emulation, compat.Versions.MinCompatibility, compat.FeatureGate())
	if err != nil {
		return ctx, err
	}
	i.parts.semantics = kubesemantics.New(gates)
	builtins, err = builtin.Configure(builtins, builtin.Options{Services: svcs, Semantics: i.parts.semantics,
		Binder:            podbinding.New(i.Registry, i.Store, i.parts.semantics),
		ComponentStatuses: componentstatus.New(i.client, o.EtcdPrefix),
		Evictor:           podeviction.New(i.Registry, i.Store),
		Connector:         podconnect.New(i.Registry, i.Store, i.parts.semantics),
		Proxy:             clusterproxy.New(i.Registry, i.Store, svcs.PrimaryIPFamily()),
		EventTTL:          o.EventTTL, Authorization: i.parts.authz, Authentication: i.parts.serving.authn, ServiceAccountTokens: tokens,
		StorageVersions: storageversion.APIOptions{Publishers: i.storageVersionPublishers,
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
	if o.WatchBookmarkInterval > 0 {
		i.Store.BookmarkInterval = o.WatchBookmarkInterval
	}
	limit, err := o.watchCacheMemoryLimit()
	if err != nil {
		return ctx, err
	}
	i.Store.WatchCache = watchcache.Options{Disabled: !o.WatchCache, MemoryLimit: limit, Registerer: i.Metrics}
	for _, c := range []lifecycle.Component{{Name: "namespace-cache", Run: i.Store.RunNamespaces}, {Name: "watch-caches", Run: i.Store.RunWatchCaches}} {
		if err := i.start(ctx, c); err != nil {
			return ctx, err
		}
	}
	// Before the server writes anything of its own, and before it serves.
	if err := identity.CheckJoin(ctx, i.Registry, i.Store, compat.Versions.Binary); err != nil {
		return ctx, err
	}
	if err := i.startRBAC(ctx); err != nil {
		return ctx, err
	}
	if err := i.startServiceAccounts(ctx); err != nil {
		return ctx, err
	}
	return ctx, i.buildIdentity(compat)
}

// newIdentityLeases returns the informer of the servers' identity leases (nil when
// APIServerIdentity is off), before the Services feature, whose kubernetes Service
// names the servers they announce; startIdentity starts it.
func (i *Instance) newIdentityLeases(compat *compatibility.Config) cache.SharedIndexInformer {
	if !compat.Enabled(compatibility.APIServerIdentity) {
		return nil
	}
	return i.Store.NewInformer(store.Source{Registry: i.Registry, Resource: identity.GroupResource, Version: "v1",
		Namespace: identity.Namespace, LabelSelector: identity.LabelIdentity}, nil)
}

// buildIdentity builds the identity lease (APIServerIdentity) and the storage version
// manager (StorageVersionAPI, which depends on it), unless their gates are off.
func (i *Instance) buildIdentity(compat *compatibility.Config) error {
	if !compat.Enabled(compatibility.APIServerIdentity) {
		if compat.Enabled(compatibility.StorageVersionAPI) {
			return fmt.Errorf("feature gate %s requires %s", compatibility.StorageVersionAPI, compatibility.APIServerIdentity)
		}
		return nil
	}
	hostname, _ := os.Hostname()
	v := compat.Versions
	endpoint, err := i.endpoint()
	if err != nil {
		return err
	}
	lease, err := identity.NewLease(i.Registry, i.Store, identity.Config{
		ID: i.ServerID, Hostname: hostname, Endpoint: endpoint.String(),
		Duration: i.opts.IdentityLeaseDuration, RenewInterval: i.opts.IdentityLeaseRenewInterval,
		Versions: wire.ComponentVersions{Binary: v.Binary, Emulation: v.Emulation, MinCompatibility: v.MinCompatibility},
	})
	if err != nil {
		return err
	}
	i.parts.lease = lease
	if !compat.Enabled(compatibility.StorageVersionAPI) {
		return nil
	}
	if err := i.newMirror(); err != nil {
		return err
	}
	var mirror func(context.Context, schema.GroupResource, storageversion.Entry) error
	if i.parts.mirror != nil {
		mirror = i.mirror
	}
	svm, err := storageversion.NewManager(storageversion.Config{
		ServerID: i.ServerID, Registry: i.Registry, Store: i.Store,
		LeaseValid: lease.Valid, Metrics: i.Metrics, ReconcileMetrics: i.runtime, Started: i.started,
		EncryptionKeys: i.Encryption.Keys, Mirror: mirror,
	})
	if err != nil {
		return err
	}
	lease.OnLapse(svm.Lapsed)
	i.parts.svm = svm
	return nil
}
