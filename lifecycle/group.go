package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Component is one long-running part of a server.
type Component struct {
	// Name identifies it in logs and errors.
	Name string
	// Run does the component's work until ctx is done, then its orderly shutdown, and
	// returns once all of it has stopped.
	Run func(ctx context.Context) error
	// Ready, if set, reports nil once the component can be relied on, else why not:
	// Start waits for it.
	Ready func() error
}

// ErrStopped means a component's Run returned before the group was stopped.
var ErrStopped = errors.New("component stopped unexpectedly")

// Group starts components in order and stops them in the reverse order. The zero
// value is ready to use. It is safe for concurrent use.
type Group struct {
	mu      sync.Mutex
	running []*running
	stopped bool
	failed  chan struct{} // closed when a component fails
	once    sync.Once
	failure error
}

type running struct {
	c      Component
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (g *Group) failedCh() chan struct{} {
	g.once.Do(func() { g.failed = make(chan struct{}) })
	return g.failed
}

// Failed is closed when a component's Run returned on its own (an error, or nil
// before it was asked to stop); FailedErr says which and why.
func (g *Group) Failed() <-chan struct{} { return g.failedCh() }

// FailedErr returns the first failure, once Failed is closed.
func (g *Group) FailedErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failure
}

// Start runs c with a context that carries ctx's values but is cancelled only by
// Stop, and waits until c is ready (its Ready reports nil; at once without Ready).
// It fails, leaving c running for Stop to stop, if c's Run returns first or ctx is
// done first.
func (g *Group) Start(ctx context.Context, c Component) error {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return fmt.Errorf("starting %s: the group is stopped", c.Name)
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &running{c: c, cancel: cancel, done: make(chan struct{})}
	g.running = append(g.running, r)
	g.mu.Unlock()
	go g.run(cctx, r)
	if c.Ready == nil {
		return nil
	}
	return waitReady(ctx, r)
}

// run runs one component and reports an exit nobody asked for.
func (g *Group) run(ctx context.Context, r *running) {
	defer close(r.done)
	r.err = r.c.Run(ctx)
	if ctx.Err() != nil {
		return
	}
	err := fmt.Errorf("%w: %s", ErrStopped, r.c.Name)
	if r.err != nil {
		err = fmt.Errorf("%w: %w", err, r.err)
	}
	klog.FromContext(ctx).Error(err, "Component failed", "component", r.c.Name)
	g.mu.Lock()
	first := g.failure == nil
	if first {
		g.failure = err
	}
	g.mu.Unlock()
	if first {
		close(g.failedCh())
	}
}

// waitReady polls r's readiness closely at first, then less often.
func waitReady(ctx context.Context, r *running) error {
	delay := time.Millisecond
	for {
		last := r.c.Ready()
		if last == nil {
			return nil
		}
		timer := time.NewTimer(delay)
		select {
		case <-r.done:
			timer.Stop()
			return errors.Join(fmt.Errorf("%w before it was ready: %s", ErrStopped, r.c.Name), r.err)
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("waiting for %s to be ready (%w): %w", r.c.Name, last, context.Cause(ctx))
		case <-timer.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// Stop stops every component, the last started first, each cancelled and waited for
// before the one started before it, and returns their errors joined (a component
// that failed earlier reports its failure). It may be called more than once.
func (g *Group) Stop() error {
	g.mu.Lock()
	g.stopped = true
	running := g.running
	g.running = nil
	g.mu.Unlock()
	var errs []error
	for i := len(running) - 1; i >= 0; i-- {
		r := running[i]
		r.cancel()
		<-r.done
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.c.Name, r.err))
		}
	}
	return errors.Join(errs...)
}
