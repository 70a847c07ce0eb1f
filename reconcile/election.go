package reconcile

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Election configures RunElected: client-go's leader election over Lock.
type Election struct {
	// Name names the election in logs.
	Name string
	// Lock is the lock, usually a resourcelock.LeaseLock.
	Lock resourcelock.Interface
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// The timings of LeaseElection: client-go's usual ones.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// LeaseElection returns the election among the servers for the Lease name in
// kube-system, in which this process campaigns as holder, with the default timings
// (set the fields to change them).
func LeaseElection(client coordinationv1client.LeasesGetter, name, holder string) Election {
	return Election{Name: name, Lock: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name},
		Client:     client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: holder},
	}, LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod}
}

// RunElected campaigns for leadership until ctx is done. While it leads, lead runs
// with a context that ends when leadership is lost (or ctx is done); lead has returned
// before RunElected campaigns again, so that two leaders never work at once in one
// process, and before it returns. Leadership is released when ctx is done, so that a
// peer takes over at once.
func RunElected(ctx context.Context, e Election, lead func(ctx context.Context)) error {
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			stopped bool // elector.Run has returned: a late callback must not lead
		)
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            finishingLock{Interface: e.Lock, timeout: e.RenewDeadline},
			LeaseDuration:   e.LeaseDuration,
			RenewDeadline:   e.RenewDeadline,
			RetryPeriod:     e.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            e.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					mu.Lock()
					if stopped {
						mu.Unlock()
						return
					}
					wg.Add(1)
					mu.Unlock()
					defer wg.Done()
					logger.V(2).Info("Leading", "election", e.Name, "identity", e.Lock.Identity())
					lead(ctx)
				},
				OnStoppedLeading: func() {
					logger.V(2).Info("No longer leading", "election", e.Name, "identity", e.Lock.Identity())
				},
			},
		})
		if err != nil {
			return err
		}
		elector.Run(ctx)
		// Run returns as soon as leadership is lost; make sure nothing still works
		// before standing again.
		mu.Lock()
		stopped = true
		mu.Unlock()
		wg.Wait()
	}
	return nil
}

// finishingLock lets each API call of the lock finish (within timeout) when the
// election's context ends mid-call, as it does when a server stops while it
// campaigns: a lease written but not acknowledged would stay held by a candidate that
// is gone until it expires, and the elector would log the cut-off call as an error.
type finishingLock struct {
	resourcelock.Interface
	timeout time.Duration
}

func (l finishingLock) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
}

func (l finishingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	ctx, cancel := l.detach(ctx)
	defer cancel()
	return l.Interface.Get(ctx)
}

func (l finishingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	ctx, cancel := l.detach(ctx)
	defer cancel()
	return l.Interface.Create(ctx, ler)
}

func (l finishingLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	ctx, cancel := l.detach(ctx)
	defer cancel()
	return l.Interface.Update(ctx, ler)
}

// Elected returns a component's Run for the controller name, elected through e: while
// it leads, run runs, and its failure is logged (it runs again in the process's next
// term of leadership, not before).
func Elected(e Elector, name string, run func(ctx context.Context) error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		return e.RunElected(ctx, func(ctx context.Context) {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "An elected controller stopped", "controller", name)
			}
		})
	}
}
