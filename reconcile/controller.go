package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// DefaultConflictDelay is how long a key whose write lost a race waits before it is
// reconciled again (with up to as much again of jitter, so that peers that raced
// spread out).
const DefaultConflictDelay = 50 * time.Millisecond

// Options tune a Controller. Zero values take the defaults.
type Options[K comparable] struct {
	// Workers is how many keys are reconciled at once (default 1).
	Workers int
	// Backoff spaces the retries of a failing key: the controller's one rate limiter
	// is made from it.
	Backoff Backoff
	// ConflictDelay is the wait before a key that met a conflict is reconciled again
	// (default DefaultConflictDelay).
	ConflictDelay time.Duration
	// Metrics receives the controller's samples (nil: kept but not exported).
	Metrics *Metrics
}

// Backoff spaces the retries of a failing key: Base after its first failure,
// doubling with each failure after, up to Max. The zero Backoff is client-go's
// controllers' default: 5ms doubling to 1000s per key, at most 10 retries a second
// overall.
type Backoff struct{ Base, Max time.Duration }

// rateLimiter is the one constructor of controllers' rate limiters.
func rateLimiter[K comparable](b Backoff) workqueue.TypedRateLimiter[K] {
	if b == (Backoff{}) {
		return workqueue.DefaultTypedControllerRateLimiter[K]()
	}
	return workqueue.NewTypedItemExponentialFailureRateLimiter[K](b.Base, max(b.Base, b.Max))
}

// Controller runs a Reconciler over a queue of keys. Create it with New, feed it with
// Add, run it with Run.
type Controller[K comparable] struct {
	name    string
	r       Reconciler[K]
	opts    Options[K]
	queue   workqueue.TypedRateLimitingInterface[K]
	metrics *Metrics
	// synced are the HasSynced of the handlers Watch registered.
	synced []cache.InformerSynced
}

// New returns a controller named name (in logs, metrics and the queue's name) that
// reconciles keys with r.
func New[K comparable](name string, r Reconciler[K], opts Options[K]) *Controller[K] {
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.ConflictDelay <= 0 {
		opts.ConflictDelay = DefaultConflictDelay
	}
	m := opts.Metrics
	if m == nil {
		m = NewMetrics(nil)
	}
	return &Controller[K]{
		name: name, r: r, opts: opts, metrics: m,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter[K](opts.Backoff),
			workqueue.TypedRateLimitingQueueConfig[K]{Name: name}),
	}
}

// Failures returns how many times in a row key has failed: its retries' backoff
// grows with it.
func (c *Controller[K]) Failures(key K) int { return c.queue.NumRequeues(key) }

// Name returns the controller's name.
func (c *Controller[K]) Name() string { return c.name }

// Add queues key for reconciliation (once, however often it is added before a
// worker takes it).
func (c *Controller[K]) Add(key K) { c.queue.Add(key) }

// AddAfter queues key once d has passed.
func (c *Controller[K]) AddAfter(key K, d time.Duration) { c.queue.AddAfter(key, d) }

// Len returns how many keys wait to be reconciled.
func (c *Controller[K]) Len() int { return c.queue.Len() }

// Run waits until the informers of Watch have delivered their initial lists, then
// reconciles keys with Options.Workers workers until ctx is done, shuts the queue
// down and returns once every worker has finished its key. It returns nil; a
// Controller runs once.
func (c *Controller[K]) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", c.name))
	if !c.WaitForSync(ctx) {
		c.queue.ShutDown()
		return nil
	}
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// WaitForSync waits until the informers of Watch have delivered their initial lists,
// and reports false if ctx was done first.
func (c *Controller[K]) WaitForSync(ctx context.Context) bool {
	err := wait.PollUntilContextCancel(ctx, syncPoll, true, func(context.Context) (bool, error) {
		for _, synced := range c.synced {
			if !synced() {
				return false, nil
			}
		}
		return true, nil
	})
	return err == nil
}

// syncPoll is how often WaitForSync looks: closely, since start-up waits on it
// (client-go's helper looks every 100 ms).
const syncPoll = 2 * time.Millisecond

// Drain reconciles, on the calling goroutine, the keys queued now and those they
// queue in turn, until the queue is empty or ctx is done: a start-up pass that must
// finish before the controller counts as synced. Keys whose retry is delayed are left
// to Run.
func (c *Controller[K]) Drain(ctx context.Context) {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", c.name))
	for c.queue.Len() > 0 && ctx.Err() == nil && c.processNext(ctx) {
	}
}

// processNext reconciles one key; false once the queue is shut down.
func (c *Controller[K]) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	start := time.Now()
	result, err := c.reconcile(ctx, key)
	c.metrics.duration.WithLabelValues(c.name).Observe(time.Since(start).Seconds())
	c.handle(ctx, key, result, err)
	return true
}

// reconcile calls the reconciler, turning a panic into an error so that one bad key
// never stops a worker.
func (c *Controller[K]) reconcile(ctx context.Context, key K) (result Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError{value: p, stack: debug.Stack()}
		}
	}()
	return c.r.Reconcile(ctx, key)
}

// handle applies the retry policy to one outcome, with its log line and metric.
func (c *Controller[K]) handle(ctx context.Context, key K, result Result, err error) {
	logger := klog.FromContext(ctx).WithValues("key", key)
	switch {
	case err == nil && result.RequeueAfter > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, result.RequeueAfter)
		c.observe("requeue")
		logger.V(5).Info("Reconciled; looking again later", "after", result.RequeueAfter)
	case err == nil:
		c.queue.Forget(key)
		c.observe("success")
		logger.V(5).Info("Reconciled")
	case ctx.Err() != nil:
		// Stopping: the next run starts from the level anyway.
		c.observe("error")
	case errors.Is(err, ErrTerminal):
		c.queue.Forget(key)
		c.observe("terminal")
		logger.Error(err, "Reconcile failed; not retried")
	case apierrors.IsConflict(err):
		c.queue.Forget(key)
		c.queue.AddAfter(key, c.opts.ConflictDelay+rand.N(c.opts.ConflictDelay))
		c.observe("conflict")
		logger.V(4).Info("Conflict; reconciling again", "err", err)
	default:
		c.queue.AddRateLimited(key)
		c.observe("error")
		logger.V(2).Info("Reconcile failed; retrying", "err", err, "retries", c.queue.NumRequeues(key))
	}
}

func (c *Controller[K]) observe(result string) {
	c.metrics.total.WithLabelValues(c.name, result).Inc()
}

// panicError is a panic of a reconciler, as an error.
type panicError struct {
	value any
	stack []byte
}

func (p panicError) Error() string {
	return fmt.Sprintf("reconciler panicked: %v\n%s", p.value, p.stack)
}
