package priorityclass

import (
	"context"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Feature is the system PriorityClasses as one server makes them: created at start
// when missing (Bootstrap), their post-start hook done once they exist.
type Feature struct {
	loopback *rest.Config
	hook     *health.PostStartHook
}

// NewFeature returns the feature; nil, nil when the server does not serve
// PriorityClasses in v1 (it has no system classes to make then). The classes are
// created with the server's own client.
func NewFeature(srv feature.Server) (*Feature, error) {
	if srv.Registry.Served(GroupResource, "v1") == nil {
		return nil, nil
	}
	return &Feature{loopback: srv.LoopbackConfig(), hook: health.NewPostStartHook(BootstrapHook)}, nil
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
	client, err := kubernetes.NewForConfig(f.loopback)
	if err != nil {
		return err
	}
	if err := Bootstrap(ctx, client.SchedulingV1()); err != nil {
		return err
	}
	f.hook.Done()
	return nil
}
