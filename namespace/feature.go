package namespace

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
)

// Feature is the namespace controllers as one server runs them: the system
// namespaces controller, with its post-start hook SystemNamespacesHook, and the
// lifecycle controller that empties terminating namespaces (Controller). They start
// at two places of the server's start-up, so the Feature has two start methods:
// Start, early, for the system namespaces the controllers after it need
// (kube-system for the identity lease), and StartController, late.
type Feature struct {
	system     *SystemController
	controller *Controller
	hook       *health.PostStartHook
}

// NewFeature builds both controllers and the hook. Every server runs them: namespaces
// are always served. Both controllers follow the namespaces (the lifecycle controller,
// every namespaced resource) through informers of the server's object store, and
// write through it.
func NewFeature(srv feature.Server) (*Feature, error) {
	system, err := NewSystemController(srv.Registry, srv.Store, srv.ReconcileMetrics)
	if err != nil {
		return nil, err
	}
	controller, err := NewController(srv.Registry, srv.Store, srv.ReconcileMetrics)
	if err != nil {
		return nil, err
	}
	return &Feature{system: system, controller: controller, hook: health.NewPostStartHook(SystemNamespacesHook)}, nil
}

// Checks are the post-start hook SystemNamespacesHook, done once the system
// namespaces exist.
func (f *Feature) Checks() []health.Checker { return []health.Checker{f.hook} }

// Start starts the system namespaces controller as the component system-namespaces,
// ready once it has created the missing ones, and marks the hook done.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if err := g.Start(ctx, lifecycle.Component{Name: "system-namespaces", Run: f.system.Run, Ready: f.system.Ready}); err != nil {
		return fmt.Errorf("creating the system namespaces: %w", err)
	}
	f.hook.Done()
	return nil
}

// StartController starts the lifecycle controller as the component
// namespace-controller. The server starts it late, among its last controllers (and so
// stops it among the first).
func (f *Feature) StartController(ctx context.Context, g *lifecycle.Group) error {
	return g.Start(ctx, lifecycle.Component{Name: "namespace-controller", Run: f.controller.Run})
}
