package garbagecollector

import (
	"time"

	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/google/uuid"
	"k8s.io/client-go/rest"
)

// ComponentConfig is what the garbage collector needs of the server that runs it:
// Config's fields but the election's holder and timings, which NewComponent derives
// from the server's ID and identity lease duration.
type ComponentConfig struct {
	// Registry and Store are the server's (Config's).
	Registry *registry.Registry
	Store    *store.Store
	// Loopback is the server's own client configuration (Config's RESTConfig).
	Loopback *rest.Config
	// ServerID starts the collector's holder identity, so that operators see which
	// server leads.
	ServerID string
	// IdentityLeaseDuration is the servers' identity lease duration
	// (--identity-lease-duration), which times the election (identity.ElectionTimings).
	IdentityLeaseDuration time.Duration
	// ReconcileMetrics receives the reconcile runtime's samples.
	ReconcileMetrics *reconcile.Metrics
}

// NewComponent returns the server's collector as the component garbage-collector,
// elected among the servers. The election is timed from the identity lease duration,
// as the storage version collector's: half of it (whole seconds, at least one),
// renewed within two thirds of that, retried every sixth (15s, 10s and 2.5s by
// default).
func NewComponent(cfg ComponentConfig) (lifecycle.Component, error) {
	lease, renew, retry := identity.ElectionTimings(cfg.IdentityLeaseDuration)
	gc, err := New(Config{
		Registry: cfg.Registry, Store: cfg.Store, RESTConfig: cfg.Loopback, Holder: cfg.ServerID + "_" + uuid.NewString(),
		LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, ReconcileMetrics: cfg.ReconcileMetrics,
	})
	if err != nil {
		return lifecycle.Component{}, err
	}
	return lifecycle.Component{Name: "garbage-collector", Run: gc.Run}, nil
}
