package bootstrap

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// hookName is the post-start hook of the bootstrap roles, named as kube-apiserver's.
const hookName = "rbac/bootstrap-roles"

// FeatureConfig is what the bootstrap roles need of the server: a client of its own
// API, the informer of ClusterRoles the aggregation reads, and the server's name.
type FeatureConfig struct {
	// Loopback is the server's own client configuration, rate limits already off (the
	// loopback identity is exempt from priority and fairness too).
	Loopback *rest.Config
	// ClusterRoles is the informer of typed ClusterRoles the aggregation controller
	// reads; its owner (package rbac's Feature) starts it.
	ClusterRoles cache.SharedIndexInformer
	// Election is the server's election of its controllers, which the aggregation
	// controller runs through.
	Election reconcile.Elector
}

// Feature is the bootstrap roles as one server runs them: Ensure at start, behind the
// rbac/bootstrap-roles post-start hook, then the ClusterRole aggregation controller,
// elected among the servers. The server builds it only with RBAC's Feature.
type Feature struct {
	client       kubernetes.Interface
	clusterRoles cache.SharedIndexInformer
	election     reconcile.Elector
	hook         *health.PostStartHook
}

// NewFeature builds it, its post-start hook not done yet.
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	client, err := kubernetes.NewForConfig(cfg.Loopback)
	if err != nil {
		return nil, err
	}
	return &Feature{client: client, clusterRoles: cfg.ClusterRoles, election: cfg.Election,
		hook: health.NewPostStartHook(hookName)}, nil
}

// Checks returns its post-start hook, rbac/bootstrap-roles.
func (f *Feature) Checks() []health.Checker { return []health.Checker{f.hook} }

// Start creates the default roles and bindings (and adds what a newer release gives
// those still marked for automatic update), marks its hook Done, then starts the
// ClusterRole aggregation controller (component clusterrole-aggregation), elected
// among the servers.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if err := Ensure(ctx, f.client); err != nil {
		return fmt.Errorf("creating the bootstrap roles: %w", err)
	}
	f.hook.Done()
	run := reconcile.Elected(f.election, "clusterrole-aggregation", func(ctx context.Context) error {
		agg, err := NewAggregator(f.client, f.clusterRoles)
		if err != nil {
			return err
		}
		return agg.Run(ctx)
	})
	return g.Start(ctx, lifecycle.Component{Name: "clusterrole-aggregation", Run: run})
}
