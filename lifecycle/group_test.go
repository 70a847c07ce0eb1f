package lifecycle_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/lifecycle"
)

// log records what components do, in order.
type log struct {
	mu     sync.Mutex
	events []string
}

func (l *log) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *log) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// component runs until asked to stop, recording its start and its (slow) stop.
func component(l *log, name string) lifecycle.Component {
	return lifecycle.Component{Name: name, Run: func(ctx context.Context) error {
		l.add("start " + name)
		<-ctx.Done()
		time.Sleep(time.Millisecond) // a shutdown that takes a while: the next must wait
		l.add("stop " + name)
		return nil
	}}
}

// Components start in order and stop in the reverse order, each joined before the
// one started before it is asked to stop.
func TestOrder(t *testing.T) {
	var l log
	var g lifecycle.Group
	for _, n := range []string{"etcd", "store", "http", "controllers"} {
		if err := g.Start(t.Context(), component(&l, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	got := l.get()
	starts, stops := got[:4], got[4:]
	slices.Sort(starts) // started in order, but each in its own goroutine
	want := []string{"stop controllers", "stop http", "stop store", "stop etcd"}
	if !slices.Equal(stops, want) || len(got) != 8 {
		t.Errorf("events %v, want the stops %v", got, want)
	}
	if err := g.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	if err := g.Start(t.Context(), component(&l, "late")); err == nil {
		t.Error("a stopped group started a component")
	}
}

// Start waits for readiness, and fails if the component gives up first.
func TestReady(t *testing.T) {
	var g lifecycle.Group
	defer func() { _ = g.Stop() }()
	var ready atomic.Bool
	go func() {
		time.Sleep(10 * time.Millisecond)
		ready.Store(true)
	}()
	c := lifecycle.Component{Name: "slow", Run: func(ctx context.Context) error { <-ctx.Done(); return nil },
		Ready: func() error {
			if !ready.Load() {
				return errors.New("not yet")
			}
			return nil
		}}
	if err := g.Start(t.Context(), c); err != nil || !ready.Load() {
		t.Fatalf("Start returned %v, ready %v", err, ready.Load())
	}
	broken := lifecycle.Component{Name: "broken", Run: func(context.Context) error { return errors.New("no disk") },
		Ready: func() error { return errors.New("never") }}
	if err := g.Start(t.Context(), broken); !errors.Is(err, lifecycle.ErrStopped) {
		t.Errorf("a component that failed before it was ready: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	never := lifecycle.Component{Name: "never", Run: func(ctx context.Context) error { <-ctx.Done(); return nil },
		Ready: func() error { return errors.New("never") }}
	if err := g.Start(ctx, never); !errors.Is(err, context.Canceled) {
		t.Errorf("waiting with a cancelled context: %v", err)
	}
}

// A component that stops on its own is reported; Stop reports the errors.
func TestFailure(t *testing.T) {
	var g lifecycle.Group
	crash := make(chan struct{})
	if err := g.Start(t.Context(), lifecycle.Component{Name: "http", Run: func(ctx context.Context) error {
		select {
		case <-crash:
			return errors.New("listener closed")
		case <-ctx.Done():
			return nil
		}
	}}); err != nil {
		t.Fatal(err)
	}
	var l log
	if err := g.Start(t.Context(), component(&l, "controllers")); err != nil {
		t.Fatal(err)
	}
	close(crash)
	select {
	case <-g.Failed():
	case <-time.After(30 * time.Second):
		t.Fatal("the failure was not reported")
	}
	if err := g.FailedErr(); !errors.Is(err, lifecycle.ErrStopped) {
		t.Errorf("FailedErr = %v", err)
	}
	if err := g.Stop(); err == nil {
		t.Error("Stop does not report the failed component's error")
	}
	if got := l.get(); !slices.Equal(got, []string{"start controllers", "stop controllers"}) {
		t.Errorf("the others were not stopped: %v", got)
	}
}
