package storageversion

import (
	"context"
	"fmt"
	"net/http"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/lifecycle"
)

// FeatureConfig is what the storage versions need of the server: the server's
// context, its identity lease, and the manager's configuration.
type FeatureConfig struct {
	// Server is the server's: the collector reads and writes through its Registry
	// and Store, and collects while the server leads its Election; the manager and the
	// collector report to its Metrics and ReconcileMetrics; Compatibility gives the
	// StorageVersionAPI gate (the manager) and APIServerIdentity, which it requires.
	feature.Server
	// Identity is the server's identity lease (nil with APIServerIdentity off): its ID
	// is the entries' apiServerID, and the manager refuses writes while it is not
	// valid.
	Identity *identity.Feature
	// Manager configures the manager, but for what Server gives (Registry, Store,
	// Metrics, ReconcileMetrics) and the identity lease's ServerID and LeaseValid.
	Manager Config
}

// Feature is the storage versions as one server runs them: the garbage collector of
// StorageVersion entries and identity leases, elected among the servers, and, with
// the StorageVersion API (KEP-2339), the Manager of this server's entries with its
// write barrier and checks.
type Feature struct {
	collector     *Collector
	collectorHook *health.PostStartHook
	manager       *Manager // nil without the StorageVersion API
}

// NewFeature builds the collector, and the manager if the StorageVersionAPI gate is
// on; nil, nil without identity leases (APIServerIdentity off), which both need, and
// an error if the StorageVersionAPI gate is on nonetheless.
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	compat := cfg.Compatibility
	if cfg.Identity == nil {
		if compat.Enabled(compatibility.StorageVersionAPI) {
			return nil, fmt.Errorf("feature gate %s requires %s", compatibility.StorageVersionAPI, compatibility.APIServerIdentity)
		}
		return nil, nil
	}
	lease, mc := cfg.Identity.Lease(), cfg.Manager
	mc.Registry, mc.Store, mc.Metrics, mc.ReconcileMetrics = cfg.Registry, cfg.Store, cfg.Metrics, cfg.ReconcileMetrics
	collector, err := NewCollector(CollectorConfig{
		Registry: mc.Registry, Store: mc.Store, Election: cfg.Election,
		Metrics: mc.Metrics, ReconcileMetrics: mc.ReconcileMetrics,
	})
	if err != nil {
		return nil, err
	}
	f := &Feature{collector: collector, collectorHook: health.NewPostStartHook(identity.LeaseCollectorHook)}
	if !compat.Enabled(compatibility.StorageVersionAPI) {
		return f, nil
	}
	mc.ServerID, mc.LeaseValid = lease.ID(), lease.Valid
	if f.manager, err = NewManager(mc); err != nil {
		return nil, err
	}
	lease.OnLapse(f.manager.Lapsed)
	return f, nil
}

// Checks are the post-start hooks identity.LeaseCollectorHook, done once the
// collector has started, and, with the manager, UpdaterHook (its PostStartHook).
func (f *Feature) Checks() []health.Checker {
	checks := []health.Checker{f.collectorHook}
	if f.manager != nil {
		checks = append(checks, f.manager.PostStartHook())
	}
	return checks
}

// Start starts the collector, then the manager. Stopped in the reverse order, the
// manager withdraws this server's entries and the collector stops, before the
// controllers' election gives leadership up and the identity lease is deleted (both
// started before them), while the server still serves.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if err := g.Start(ctx, lifecycle.Component{Name: "storage-version-gc", Run: f.collector.Run}); err != nil {
		return err
	}
	f.collectorHook.Done()
	if f.manager == nil {
		return nil
	}
	return g.Start(ctx, lifecycle.Component{Name: "storage-versions", Run: f.manager.Run})
}

// Manager returns the storage version manager (nil without the StorageVersion API,
// or on a nil Feature): the CRD controller publishes definitions through it, and
// /readyz reports its WritesCheck (ReadyChecks).
func (f *Feature) Manager() *Manager {
	if f == nil {
		return nil
	}
	return f.manager
}

// ReadyChecks are the checks for /readyz alone: the manager's WritesCheck, ready only
// while writes are accepted, not just once they were at start-up; none without the
// manager.
func (f *Feature) ReadyChecks() []health.Checker {
	if m := f.Manager(); m != nil {
		return []health.Checker{m.WritesCheck()}
	}
	return nil
}

// Barrier returns the manager's write barrier (Manager.Filter), for the handler
// chain's slot (server.Config.StorageVersionBarrier); nil without the manager.
func (f *Feature) Barrier() func(http.Handler) http.Handler {
	if m := f.Manager(); m != nil {
		return m.Filter
	}
	return nil
}
