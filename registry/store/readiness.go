package store

import (
	"context"
	"time"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// readinessHook names the post-start hook that says the watch caches opened at
// start-up have loaded, kube-apiserver's (which waits for its watch caches, a minute
// at most).
const readinessHook = "storage-readiness"

// readinessTimeout is how long the storage-readiness hook waits for the watch caches
// at most, as kube-apiserver's --storage-initialization-timeout (1m).
const readinessTimeout = time.Minute

// Readiness is a server's storage readiness: its post-start hook storage-readiness,
// and the component that finishes it once every watch cache open at its start has
// loaded its objects (CachesLoaded), or after readinessTimeout, as kube-apiserver
// does (the store then answers lists and watches from etcd until they have, and the
// component says so).
type Readiness struct {
	store *Store
	hook  *health.PostStartHook
}

// NewReadiness returns the storage readiness of s, its hook not done yet.
func NewReadiness(s *Store) *Readiness {
	return &Readiness{store: s, hook: health.NewPostStartHook(readinessHook)}
}

// Checks are the post-start hook storage-readiness.
func (r *Readiness) Checks() []health.Checker { return []health.Checker{r.hook} }

// Start starts the component storage-readiness, which finishes the hook; ready once
// it has.
func (r *Readiness) Start(ctx context.Context, g *lifecycle.Group) error {
	return g.Start(ctx, lifecycle.Component{Name: "storage-readiness", Run: r.run, Ready: func() error { return r.hook.Check(nil) }})
}

// run waits for the watch caches (readinessTimeout at most), finishes the hook, and
// returns once ctx is done.
func (r *Readiness) run(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, readinessTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(wctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return r.store.CachesLoaded() == nil, nil
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		klog.FromContext(ctx).Info("Watch caches not loaded in time; lists and watches read etcd until they are", "err", r.store.CachesLoaded())
	}
	r.hook.Done()
	<-ctx.Done()
	return nil
}
