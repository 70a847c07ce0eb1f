package garbagecollector

import (
	"context"
	"time"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/lifecycle"
	"github.com/google/uuid"
)

// NewFeature returns the server's collector as the server runs it: built when the
// server starts it, and started as the component garbage-collector, elected among
// the servers. It reads and writes through the server's registry and object store,
// elects over its own client, and its holder identity starts with the server's ID,
// so that operators see which server leads. The election is timed from the servers'
// identity lease duration (--identity-lease-duration, identity.ElectionTimings), as
// the storage version collector's: half of it (whole seconds, at least one), renewed
// within two thirds of that, retried every sixth (15s, 10s and 2.5s by default).
func NewFeature(srv feature.Server, identityLeaseDuration time.Duration) feature.Feature {
	return feature.Func(func(ctx context.Context, g *lifecycle.Group) error {
		lease, renew, retry := identity.ElectionTimings(identityLeaseDuration)
		gc, err := New(Config{
			Registry: srv.Registry, Store: srv.Store, RESTConfig: srv.LoopbackConfig(), Holder: srv.ServerID + "_" + uuid.NewString(),
			LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, ReconcileMetrics: srv.ReconcileMetrics,
		})
		if err != nil {
			return err
		}
		return g.Start(ctx, lifecycle.Component{Name: "garbage-collector", Run: gc.Run})
	})
}
