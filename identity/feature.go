package identity

import (
	"context"
	"errors"
	"net/netip"
	"os"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/registry/store"
	"k8s.io/client-go/tools/cache"
)

// errLeasesNotSynced: the informer of identity leases has not read them yet.
var errLeasesNotSynced = errors.New("the identity leases have not been read yet")

// FeatureConfig is what the identity lease needs of the server: where it writes and
// reads leases, the gate that turns it on and the versions the lease announces, the
// server's ID and endpoint, and the lease's timing.
type FeatureConfig struct {
	// Server is the server's: the lease, named by its ServerID, is written, and every
	// server's lease read, through the object store; the identity leases' informer
	// is started through the shared informers, so that the informer-sync check counts
	// it; Compatibility gives the APIServerIdentity gate and the binary, emulation and
	// minimum compatibility versions the lease announces.
	feature.Server
	// Endpoint returns where the server serves, for the cluster (AnnotationEndpoint).
	// It is called only with the gate on: choosing the address may fail on a host
	// where a server without identity leases runs fine.
	Endpoint func() (netip.AddrPort, error)
	// Options time the lease (--identity-lease-duration,
	// --identity-lease-renew-interval).
	Options
}

// Feature is the identity lease as one server runs it (APIServerIdentity, KEP-1965):
// the server's own lease, the informer of every server's identity lease, and the
// post-start hook LeaseControllerHook.
type Feature struct {
	lease     *Lease
	leases    cache.SharedIndexInformer
	informers *informers.Shared
	hook      *health.PostStartHook
}

// NewFeature builds the lease and the informer of the identity leases; nil, nil when
// the APIServerIdentity gate is off (the server then has no identity lease, and reads
// no one's).
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	compat := cfg.Compatibility
	if !compat.Enabled(compatibility.APIServerIdentity) {
		return nil, nil
	}
	hostname, _ := os.Hostname()
	endpoint, err := cfg.Endpoint()
	if err != nil {
		return nil, err
	}
	lease, err := NewLease(cfg.Registry, cfg.Store, Config{
		ID: cfg.ServerID, Hostname: hostname, Endpoint: endpoint.String(),
		Duration: cfg.LeaseDuration, RenewInterval: cfg.RenewInterval,
		Versions: compat.Versions.Component(),
	})
	if err != nil {
		return nil, err
	}
	leases := cfg.Store.NewInformer(store.Source{Registry: cfg.Registry, Resource: GroupResource, Version: leaseVersion,
		Namespace: Namespace, LabelSelector: LabelIdentity}, nil)
	return &Feature{lease: lease, leases: leases, informers: cfg.Informers, hook: health.NewPostStartHook(LeaseControllerHook)}, nil
}

// Checks are the post-start hook LeaseControllerHook, done once the lease is written.
func (f *Feature) Checks() []health.Checker { return []health.Checker{f.hook} }

// Start starts the identity lease (ready once written; stopped, it deletes the
// lease), then the informer of the identity leases (ready once synced).
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if err := g.Start(ctx, lifecycle.Component{Name: "identity-lease", Run: f.lease.Run, Ready: f.lease.Ready}); err != nil {
		return err
	}
	f.hook.Done()
	return f.informers.Start(ctx, g, "identity-leases", errLeasesNotSynced, f.leases)
}

// Lease returns the server's identity lease, for the storage version manager and
// collector (package storageversion): the manager refuses writes while the lease is
// not Valid and registers again once it lapsed (OnLapse).
func (f *Feature) Lease() *Lease { return f.lease }

// Leases returns the informer of every server's identity lease, started by Start
// (nil on a nil Feature: a server without identity leases). The kubernetes Service's
// endpoints and the aggregator's local APIServices follow which servers are live
// from it.
func (f *Feature) Leases() cache.SharedIndexInformer {
	if f == nil {
		return nil
	}
	return f.leases
}
