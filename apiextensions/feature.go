package apiextensions

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storageversion"
	"k8s.io/klog/v2"
)

// The post-start hooks of the CRD controller, named as kube-apiserver's: its informer
// synced, its reconciling started, every stored definition served.
const (
	hookInformers   = "start-apiextensions-informers"
	hookControllers = "start-apiextensions-controllers"
	hookSynced      = "crd-informer-synced"
)

// errNotSynced: the CRD controller has not served every stored definition yet.
var errNotSynced = errors.New("the stored CustomResourceDefinitions are not all served yet")

// FeatureConfig is what the CRD controller needs of the server: its context, and
// the storage version manager it publishes definitions through.
type FeatureConfig struct {
	// Server is the server's: definitions are read through its object store and
	// served from its registry; custom resources are served without validation
	// ratcheting while its CRDValidationRatcheting gate is off.
	feature.Server
	// StorageVersions is the server's storage version manager (nil without the
	// StorageVersion API): definitions are put into service through it, and once the
	// stored ones are, it withdraws the entries of resources no longer served.
	StorageVersions *storageversion.Manager
}

// Feature is the CRD controller as one server runs it: the Controller, its
// post-start hooks, and, with the StorageVersion API, the end of the storage version
// manager's first round, which start-up waits for once the definitions are served.
type Feature struct {
	controller *Controller
	svm        *storageversion.Manager
	hooks      []*health.PostStartHook
}

// NewFeature builds the controller. Every server runs it: customresourcedefinitions
// are always served.
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	c, err := NewController(cfg.Registry, cfg.Store, cfg.ReconcileMetrics)
	if err != nil {
		return nil, err
	}
	if svm := cfg.StorageVersions; svm != nil {
		c.Publish = publishThrough(svm)
	}
	c.NoRatcheting = !cfg.Compatibility.Enabled(compatibility.CRDValidationRatcheting)
	f := &Feature{controller: c, svm: cfg.StorageVersions}
	for _, name := range []string{hookInformers, hookControllers, hookSynced} {
		f.hooks = append(f.hooks, health.NewPostStartHook(name))
	}
	return f, nil
}

// publishThrough is the controller's Publish through svm: a storage version change
// that other servers cannot decode yet is published again shortly.
func publishThrough(svm *storageversion.Manager) func(context.Context, *registry.Resource, func(context.Context, *registry.Resource) error) error {
	return func(ctx context.Context, res *registry.Resource, put func(context.Context, *registry.Resource) error) error {
		err := svm.Publish(ctx, res, put)
		if errors.Is(err, storageversion.ErrPeersCatchingUp) {
			return fmt.Errorf("%w: %w", ErrPublishAgain, err)
		}
		return err
	}
}

// Checks are the post-start hooks start-apiextensions-informers,
// start-apiextensions-controllers and crd-informer-synced, done once every stored
// definition is served.
func (f *Feature) Checks() []health.Checker {
	checks := make([]health.Checker, 0, len(f.hooks))
	for _, h := range f.hooks {
		checks = append(checks, h)
	}
	return checks
}

// Start starts the controller, ready once it serves every stored definition. Then,
// with the storage version manager, it waits until every built-in resource has had
// one registration attempt: writes to those registered pass; the others stay refused
// (and /readyz says why) while their registration is retried.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	c := f.controller
	if err := g.Start(ctx, lifecycle.Component{Name: "crd-controller", Run: c.Run, Ready: func() error {
		if !c.HasSynced() {
			return errNotSynced
		}
		return nil
	}}); err != nil {
		return fmt.Errorf("serving the stored CustomResourceDefinitions: %w", err)
	}
	// Its informer has synced, it reconciles, and every stored definition is served.
	for _, h := range f.hooks {
		h.Done()
	}
	if f.svm == nil {
		return nil
	}
	if err := f.svm.WaitFirstRound(ctx); err != nil {
		return fmt.Errorf("registering storage versions: %w", err)
	}
	if err := f.svm.ResourcesSynced(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot withdraw the storage version entries of resources this server no longer serves; they stay until it restarts")
	}
	return nil
}
