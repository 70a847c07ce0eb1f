package garbagecollector

import (
	"time"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/lifecycle"
	"github.com/google/uuid"
)

// NewComponent returns the server's collector as the component garbage-collector,
// elected among the servers: it reads and writes through the server's registry and
// object store, elects over its own client, and its holder identity starts with the
// server's ID, so that operators see which server leads. The election is timed from
// the servers' identity lease duration (--identity-lease-duration,
// identity.ElectionTimings), as the storage version collector's: half of it (whole
// seconds, at least one), renewed within two thirds of that, retried every sixth
// (15s, 10s and 2.5s by default).
func NewComponent(srv feature.Server, identityLeaseDuration time.Duration) (lifecycle.Component, error) {
	lease, renew, retry := identity.ElectionTimings(identityLeaseDuration)
	gc, err := New(Config{
		Registry: srv.Registry, Store: srv.Store, RESTConfig: srv.LoopbackConfig(), Holder: srv.ServerID + "_" + uuid.NewString(),
		LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, ReconcileMetrics: srv.ReconcileMetrics,
	})
	if err != nil {
		return lifecycle.Component{}, err
	}
	return lifecycle.Component{Name: "garbage-collector", Run: gc.Run}, nil
}
