package garbagecollector

import (
	"context"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/lifecycle"
)

// NewFeature returns the server's collector as the server runs it: built when the
// server starts it, and started as the component garbage-collector, collecting while
// the server leads its election of controllers (feature.Server.Election, timed from
// the servers' identity lease duration, so that a new leader collects before a dead
// one's identity lease expires). It reads and writes through the server's registry
// and object store.
func NewFeature(srv feature.Server) feature.Feature {
	return feature.Func(func(ctx context.Context, g *lifecycle.Group) error {
		gc, err := New(Config{
			Registry: srv.Registry, Store: srv.Store, RESTConfig: srv.LoopbackConfig(), Election: srv.Election,
			ReconcileMetrics: srv.ReconcileMetrics,
		})
		if err != nil {
			return err
		}
		return g.Start(ctx, lifecycle.Component{Name: "garbage-collector", Run: gc.Run})
	})
}
