package priorityclass

import (
	"context"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/registry"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// FeatureConfig is what the system PriorityClasses need of the server.
type FeatureConfig struct {
	// Registry is the server's: the classes are made only where PriorityClasses are
	// served in v1.
	Registry *registry.Registry
	// Loopback is the server's own client configuration, rate limits off: the classes
	// are created with it.
	Loopback *rest.Config
}

// Feature is the system PriorityClasses as one server makes them: created at start
// when missing (Bootstrap), their post-start hook done once they exist.
type Feature struct {
	cfg  FeatureConfig
	hook *health.PostStartHook
}

// NewFeature returns the feature; nil, nil when the server does not serve
// PriorityClasses in v1 (it has no system classes to make then).
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	if cfg.Registry.Served(GroupResource, "v1") == nil {
		return nil, nil
	}
	return &Feature{cfg: cfg, hook: health.NewPostStartHook(BootstrapHook)}, nil
}

// Checks are the post-start hook of the system classes (BootstrapHook); none on a nil
// Feature.
func (f *Feature) Checks() []health.Checker {
	if f == nil {
		return nil
	}
	return []health.Checker{f.hook}
}

// Start creates the system classes that are missing and marks the hook done; it runs
// no component in g. A nil Feature does nothing.
func (f *Feature) Start(ctx context.Context, _ *lifecycle.Group) error {
	if f == nil {
		return nil
	}
	client, err := kubernetes.NewForConfig(f.cfg.Loopback)
	if err != nil {
		return err
	}
	if err := Bootstrap(ctx, client.SchedulingV1()); err != nil {
		return err
	}
	f.hook.Done()
	return nil
}
