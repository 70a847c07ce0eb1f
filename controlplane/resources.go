package controlplane

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/encryption"
	"github.com/concordproject/concord/flowcontrol"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// configure is the first phase, before anything starts or is written: the
// compatibility configuration (KEP-4330), the built-in resources it selects, and the
// checks of the options that depend on them, so that a start its flags refuse leaves
// etcd as it was.
func configure(ctx context.Context, o *Options) (*compatibility.Config, []*registry.Resource, error) {
	compat, err := o.Compatibility.Complete(ctx)
	if err != nil {
		return nil, nil, err
	}
	builtins, err := compat.Resources()
	if err != nil {
		return nil, nil, err
	}
	if o.FlowControl.Enable && !servedIn(builtins)(flowcontrol.FlowSchemas, "v1") {
		return nil, nil, flowcontrol.ErrNoAPI
	}
	return compat, builtins, nil
}

// servedIn reports whether resources serve a group-resource in a version.
func servedIn(resources []*registry.Resource) func(schema.GroupResource, string) bool {
	return func(gr schema.GroupResource, v string) bool {
		for _, r := range resources {
			if r.GroupResource() == gr {
				return r.ServedVersion(v) != nil
			}
		}
		return false
	}
}

// core is what every feature is built with: the server's flags, versions and
// identity, its storage, registry, object store and shared informers, its metrics and
// its own client. Made once, at the start of the resources phase; never changed.
type core struct {
	opts      *Options
	compat    *compatibility.Config
	id        string
	url       string
	started   time.Time
	client    *clientv3.Client
	raw       *storage.Store
	metrics   *prometheus.Registry
	runtime   *reconcile.Metrics
	registry  *registry.Registry
	store     *store.Store
	informers *informers.Shared
	// encryption seals and opens stored values (nil: plaintext).
	encryption *encryption.Config
	// loopback is the server's own identity (system:apiserver, exempt from priority
	// and fairness) without client-side rate limits.
	loopback *rest.Config
}

// newCore makes the core of the phases before it: an empty registry, the object store
// over raw storage, the shared informers of both, and the server's client (loopback,
// its rate limits turned off here).
func newCore(o *Options, compat *compatibility.Config, st stored, cr *credentials, loopback *rest.Config, started time.Time) *core {
	reg := registry.New()
	s := store.NewStore(st.raw)
	loopback = rest.CopyConfig(loopback)
	loopback.QPS = -1
	return &core{opts: o, compat: compat, id: cr.serverID, url: cr.url, started: started, client: st.client, raw: st.raw,
		metrics: st.metrics, runtime: reconcile.NewMetrics(st.metrics), registry: reg, store: s,
		informers: informers.New(reg, s), encryption: cr.encryption, loopback: loopback}
}

// loopbackConfig returns a copy of the server's own client configuration, without
// client-side rate limits.
func (c *core) loopbackConfig() *rest.Config { return rest.CopyConfig(c.loopback) }

// served reports whether the registry serves a group-resource in a version.
func (c *core) served(gr schema.GroupResource, v string) bool { return c.registry.Served(gr, v) != nil }

// buildResources is the resources phase: every feature built (features.go), the
// registry filled with the built-in resources they configure and the CRD resource,
// the object store's caches started, the check that this release may join the
// servers sharing etcd, and the informers requests are answered from (RBAC's, service
// accounts') started, so that the server decides with them from its first request.
func buildResources(ctx context.Context, g *lifecycle.Group, c *core, cr *credentials, builtins []*registry.Resource) (*features, error) {
	fs, builtins, err := buildEarly(c, cr, builtins)
	if err != nil {
		return nil, err
	}
	for _, res := range builtins {
		if err := c.registry.Put(ctx, res); err != nil {
			return nil, fmt.Errorf("registering %s: %w", res.GroupResource(), err)
		}
	}
	if err := c.opts.Store.Apply(c.store, c.metrics); err != nil {
		return nil, err
	}
	for _, comp := range []lifecycle.Component{{Name: "namespace-cache", Run: c.store.RunNamespaces}, {Name: "watch-caches", Run: c.store.RunWatchCaches}} {
		if err := g.Start(ctx, comp); err != nil {
			return nil, err
		}
	}
	// Before the server writes anything of its own, and before it serves.
	if err := identity.CheckJoin(ctx, c.registry, c.store, c.compat.Versions.Binary); err != nil {
		return nil, err
	}
	if err := fs.buildLate(ctx, c, cr); err != nil {
		return nil, err
	}
	for _, f := range present(fs.rbac, fs.serviceAccounts) {
		if err := f.Start(ctx, g); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// endpoint returns where the server serves, for the cluster (ServingOptions.Advertised).
func (c *core) endpoint() (netip.AddrPort, error) { return c.opts.Serving.Advertised(c.url) }
