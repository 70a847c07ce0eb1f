package flowcontrol

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// FlowSchemas is the resource API priority and fairness is configured with; it needs
// it served in v1.
var FlowSchemas = schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "flowschemas"}

// ErrNoAPI means API priority and fairness is on but its API is not served.
var ErrNoAPI = errors.New("--enable-priority-and-fairness needs flowcontrol.apiserver.k8s.io/v1 served (see --runtime-config), or pass --enable-priority-and-fairness=false")

// NewFeature builds API priority and fairness as the options say (nil, nil when it
// is off); served reports whether the server serves a resource in v1. The Controller
// is the feature: its Checks, Start, and the handler chain's Filter.
func NewFeature(o Options, served func(schema.GroupResource, string) bool, loopback *rest.Config, metrics *reconcile.Metrics) (*Controller, error) {
	if !o.Enable {
		return nil, nil
	}
	if !served(FlowSchemas, "v1") {
		return nil, ErrNoAPI
	}
	return New(Config{RESTConfig: loopback, ConcurrencyLimit: o.ConcurrencyLimit(), ReconcileMetrics: metrics})
}

// Start starts it as the component priority-and-fairness, ready once it has read the
// configuration and written the bootstrap one.
func (c *Controller) Start(ctx context.Context, g *lifecycle.Group) error {
	if err := g.Start(ctx, lifecycle.Component{Name: "priority-and-fairness", Run: c.Run, Ready: c.Ready}); err != nil {
		return fmt.Errorf("starting API priority and fairness: %w", err)
	}
	return nil
}
