package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/lifecycle"
	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FlowSchemas is the resource API priority and fairness is configured with; it needs
// it served in v1.
var FlowSchemas = schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "flowschemas"}

// ErrNoAPI means API priority and fairness is on but its API is not served.
var ErrNoAPI = errors.New("--enable-priority-and-fairness needs flowcontrol.apiserver.k8s.io/v1 served (see --runtime-config), or pass --enable-priority-and-fairness=false")

// NewFeature builds API priority and fairness as the options say (nil, nil when it
// is off), over the server's own client; ErrNoAPI if the server's registry does not
// serve FlowSchemas in v1. The Controller is the feature: its Checks, Start, and the
// handler chain's Slot.
func NewFeature(srv feature.Server, o Options) (*Controller, error) {
	if !o.Enable {
		return nil, nil
	}
	if srv.Registry.Served(FlowSchemas, "v1") == nil {
		return nil, ErrNoAPI
	}
	return New(Config{RESTConfig: srv.LoopbackConfig(), ConcurrencyLimit: o.ConcurrencyLimit(), ReconcileMetrics: srv.ReconcileMetrics})
}

// Slot is what the handler chain's priority-and-fairness slot takes
// (server.Config.FlowControl): Filter, or nil on a nil Controller (API priority and
// fairness off).
func (c *Controller) Slot() func(http.Handler) http.Handler {
	if c == nil {
		return nil
	}
	return c.Filter
}

// Gatherers are the metrics of API priority and fairness the server serves besides
// its own (Gatherer); none on a nil Controller.
func (c *Controller) Gatherers() prometheus.Gatherers {
	if c == nil {
		return nil
	}
	return prometheus.Gatherers{c.Gatherer()}
}

// Start starts it as the component priority-and-fairness, ready once it has read the
// configuration and written the bootstrap one.
func (c *Controller) Start(ctx context.Context, g *lifecycle.Group) error {
	if err := g.Start(ctx, lifecycle.Component{Name: "priority-and-fairness", Run: c.Run, Ready: c.Ready}); err != nil {
		return fmt.Errorf("starting API priority and fairness: %w", err)
	}
	return nil
}
