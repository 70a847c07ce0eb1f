package controlplane

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/google/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
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
	if err := o.FlowControl.ValidateAPI(builtins); err != nil {
		return nil, nil, err
	}
	return compat, builtins, nil
}

// core is what the features are built with: the context every feature shares
// (feature.Server: the registry, the object store, the shared informers, the server's
// own client, ID, compatibility configuration and metrics), and what the phases
// before it returned (the flags, storage, credentials and start time), which the
// composition root builds the features from. Made once, at the start of the resources
// phase; never changed.
type core struct {
	feature.Server
	election *reconcile.Campaign // Server's Election, which the controllers phase runs
	opts     *Options
	st       stored
	cr       *credentials
	started  time.Time
}

// newCore makes the core of the phases before it: an empty registry, the object store
// over raw storage, the shared informers of both, the reconcile runtime's metrics, the
// server's client (loopback, its rate limits turned off here) and its election of
// controllers.
func newCore(o *Options, compat *compatibility.Config, st stored, cr *credentials, loopback *rest.Config, started time.Time) (*core, error) {
	reg := registry.New()
	s := store.NewStore(st.raw)
	loopback = rest.CopyConfig(loopback)
	loopback.QPS = -1
	election, err := newElection(loopback, cr.serverID, o.IdentityLease.LeaseDuration)
	if err != nil {
		return nil, err
	}
	return &core{Server: feature.Server{Registry: reg, Store: s, Informers: informers.New(reg, s), Loopback: loopback,
		ServerID: cr.serverID, Election: election, Compatibility: compat, Metrics: st.metrics, ReconcileMetrics: reconcile.NewMetrics(st.metrics)},
		election: election, opts: o, st: st, cr: cr, started: started}, nil
}

// newElection returns the server's election of its controllers (feature.Server's
// Election): Lease kube-system/concord-controllers, this server's candidate named
// after its ID, timed from the identity lease duration (identity.ElectionTimings),
// so that the storage version and garbage collectors' new leader is in place
// before a dead leader's identity lease expires.
func newElection(loopback *rest.Config, serverID string, identityLease time.Duration) (*reconcile.Campaign, error) {
	client, err := coordinationv1client.NewForConfig(loopback)
	if err != nil {
		return nil, fmt.Errorf("the controllers' election: %w", err)
	}
	e := reconcile.LeaseElection(client, feature.ElectionLease, serverID+"_"+uuid.NewString())
	e.LeaseDuration, e.RenewDeadline, e.RetryPeriod = identity.ElectionTimings(identityLease)
	return reconcile.NewCampaign(e), nil
}

// endpoint returns where the server serves, for the cluster (ServingOptions.Advertised).
func (c *core) endpoint() (netip.AddrPort, error) { return c.opts.Serving.Advertised(c.cr.url) }

// buildResources is the resources phase: every feature built (features.go), the
// registry filled with the built-in resources they configure and the CRD resource,
// the object store's caches started, the check that this release may join the
// servers sharing etcd, and the informers requests are answered from (RBAC's, service
// accounts') started, so that the server decides with them from its first request.
func buildResources(ctx context.Context, g *lifecycle.Group, c *core, builtins []*registry.Resource) (*features, error) {
	fs, builtins, err := buildEarly(c, builtins)
	if err != nil {
		return nil, err
	}
	for _, res := range builtins {
		if err := c.Registry.Put(ctx, res); err != nil {
			return nil, fmt.Errorf("registering %s: %w", res.GroupResource(), err)
		}
	}
	if err := c.opts.Store.Apply(c.Store, c.Metrics); err != nil {
		return nil, err
	}
	for _, comp := range []lifecycle.Component{{Name: "namespace-cache", Run: c.Store.RunNamespaces}, {Name: "watch-caches", Run: c.Store.RunWatchCaches}} {
		if err := g.Start(ctx, comp); err != nil {
			return nil, err
		}
	}
	// Before the server writes anything of its own, and before it serves.
	if err := identity.CheckJoin(ctx, c.Registry, c.Store, c.Compatibility.Versions.Binary); err != nil {
		return nil, err
	}
	if err := fs.buildLate(ctx, c); err != nil {
		return nil, err
	}
	for _, f := range feature.Present(fs.rbac, fs.serviceAccounts) {
		if err := f.Start(ctx, g); err != nil {
			return nil, err
		}
	}
	return fs, nil
}
