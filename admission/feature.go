package admission

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
)

// InitializerHook is the post-start hook of the admission chain, kube-apiserver's:
// done once its plugins have read what they read.
const InitializerHook = "start-apiserver-admission-initializer"

// FeatureConfig is what admission needs of the server: its context, and the chain's
// configuration.
type FeatureConfig struct {
	// Server is the server's. It gives the chain its Registry, RESTConfig (its own
	// client), ServerID, and, from its compatibility configuration, CELVersion (the
	// minimum compatibility version), MutatingPolicies (the MutatingAdmissionPolicy
	// gate) and Versions; its ServerID names its candidate in the status
	// controller's election, whose reconcile samples go to its ReconcileMetrics.
	feature.Server
	// Chain configures the chain, but for what Server gives.
	Chain Config
}

// Feature is admission as one server runs it: the chain (mutating and validating
// plugins, policies and webhooks), with its post-start hook InitializerHook, and the
// elected ValidatingAdmissionPolicy status controller when the policies are served.
type Feature struct {
	chain        *Chain
	typeChecking *TypeChecking // nil while the policies are not served
	hook         *health.PostStartHook
}

// NewFeature builds the chain and the status controller. Every server runs the
// chain.
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	cc, compat := cfg.Chain, cfg.Compatibility
	cc.Registry, cc.RESTConfig, cc.ServerID = cfg.Registry, cfg.LoopbackConfig(), cfg.ServerID
	cc.CELVersion, cc.Versions = compat.Versions.MinCompatibility, compat.Versions.Effective()
	cc.MutatingPolicies = compat.Enabled(compatibility.MutatingAdmissionPolicy)
	chain, err := New(cc)
	if err != nil {
		return nil, err
	}
	f := &Feature{chain: chain, hook: health.NewPostStartHook(InitializerHook)}
	if cfg.Registry.Served(ValidatingPoliciesGR, "v1") == nil {
		return f, nil
	}
	f.typeChecking, err = NewTypeChecking(TypeCheckingConfig{
		RESTConfig: cc.RESTConfig, Election: cfg.Election, ReconcileMetrics: cfg.ReconcileMetrics,
	})
	return f, err
}

// Chain is what the server's handlers admit requests with.
func (f *Feature) Chain() *Chain { return f.chain }

// Checks are the post-start hook InitializerHook.
func (f *Feature) Checks() []health.Checker { return []health.Checker{f.hook} }

// Synced reports whether the chain's informers have read what its plugins read: part
// of the server's informer-sync check.
func (f *Feature) Synced() error { return f.chain.Ready() }

// Start starts the chain as the component admission, ready once its informers have
// synced (then the hook is done), and the status controller as the component
// validatingadmissionpolicy-status.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if err := g.Start(ctx, lifecycle.Component{Name: "admission", Run: f.chain.Run, Ready: f.chain.Ready}); err != nil {
		return fmt.Errorf("starting admission: %w", err)
	}
	f.hook.Done()
	if f.typeChecking == nil {
		return nil
	}
	if err := g.Start(ctx, lifecycle.Component{Name: "validatingadmissionpolicy-status", Run: f.typeChecking.Run}); err != nil {
		return fmt.Errorf("starting the ValidatingAdmissionPolicy status controller: %w", err)
	}
	return nil
}
