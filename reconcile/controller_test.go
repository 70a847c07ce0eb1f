package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// script is a reconciler that answers each call for a key with the next outcome in
// its script, and records the calls.
type script struct {
	mu       sync.Mutex
	outcomes map[string][]outcome
	calls    map[string]int
	done     chan string // receives a key each time its script runs out
}

type outcome struct {
	result reconcile.Result
	err    error
	panic  bool
}

func newScript(outcomes map[string][]outcome) *script {
	return &script{outcomes: outcomes, calls: map[string]int{}, done: make(chan string, 100)}
}

func (s *script) Reconcile(_ context.Context, key string) (reconcile.Result, error) {
	s.mu.Lock()
	n := s.calls[key]
	s.calls[key]++
	list := s.outcomes[key]
	s.mu.Unlock()
	if n >= len(list) {
		return reconcile.Result{}, nil
	}
	if n == len(list)-1 {
		defer func() { s.done <- key }()
	}
	o := list[n]
	if o.panic {
		panic("boom")
	}
	return o.result, o.err
}

func (s *script) callsOf(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key]
}

// fast keeps retries quick and equal, so tests count outcomes, never durations.
func fast() reconcile.Backoff {
	return reconcile.Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond}
}

func run(t *testing.T, c *reconcile.Controller[string]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return")
		}
	}
}

func wait(t *testing.T, s *script, keys ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for len(want) > 0 {
		select {
		case k := <-s.done:
			delete(want, k)
		case <-time.After(30 * time.Second):
			t.Fatalf("scripts not played out: %v", want)
		}
	}
}

// Each outcome is handled by the one policy: errors, conflicts, panics and requeues
// come back until success; terminal errors do not; every outcome is counted.
func TestOutcomes(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "x", errors.New("raced"))
	s := newScript(map[string][]outcome{
		"ok":       {{}},
		"flaky":    {{err: errors.New("etcd sulks")}, {err: errors.New("still")}, {}},
		"raced":    {{err: conflict}, {err: conflict}, {err: conflict}, {}},
		"later":    {{result: reconcile.Result{RequeueAfter: time.Millisecond}}, {}},
		"hopeless": {{err: reconcile.TerminalError(errors.New("bad spec"))}},
		"panics":   {{panic: true}, {}},
	})
	reg := prometheus.NewRegistry()
	c := reconcile.New[string]("test", s, reconcile.Options[string]{
		Workers: 3, Backoff: fast(), ConflictDelay: time.Millisecond, Metrics: reconcile.NewMetrics(reg)})
	stop := run(t, c)
	for _, k := range []string{"ok", "flaky", "raced", "later", "hopeless", "panics"} {
		c.Add(k)
	}
	wait(t, s, "ok", "flaky", "raced", "later", "hopeless", "panics")
	stop()
	for key, want := range map[string]int{"ok": 1, "flaky": 3, "raced": 4, "later": 2, "hopeless": 1, "panics": 2} {
		if got := s.callsOf(key); got != want {
			t.Errorf("%s reconciled %d times, want %d", key, got, want)
		}
	}
	for result, want := range map[string]float64{"success": 5, "error": 3, "conflict": 3, "requeue": 1, "terminal": 1} {
		if got := counter(t, reg, result); got != want {
			t.Errorf("%s outcomes: %v, want %v", result, got, want)
		}
	}
}

// counter reads concord_controller_reconcile_total of the test controller.
func counter(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, f := range families {
		if f.GetName() != "concord_controller_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == "test" && labels["result"] == result {
				v = m.GetCounter().GetValue()
			}
		}
	}
	return v
}

// A conflict does not grow the key's backoff: after conflicts the next error waits
// as long as a first error would.
func TestConflictKeepsBackoff(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "x", errors.New("raced"))
	s := newScript(map[string][]outcome{"k": {{err: conflict}, {err: conflict}, {err: conflict}, {err: conflict}, {}}})
	c := reconcile.New[string]("test", s, reconcile.Options[string]{Backoff: reconcile.Backoff{Base: time.Millisecond, Max: time.Hour}, ConflictDelay: time.Millisecond})
	stop := run(t, c)
	c.Add("k")
	wait(t, s, "k")
	stop()
	if n := c.Failures("k"); n != 0 {
		t.Errorf("%d failures counted against the key after conflicts and a success, want 0", n)
	}
}

// Run returns only once the key a worker holds is finished.
func TestRunJoinsWorkers(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	r := reconcile.Func[string](func(ctx context.Context, _ string) (reconcile.Result, error) {
		close(started)
		<-release
		finished.Store(true)
		return reconcile.Result{}, nil
	})
	c := reconcile.New[string]("test", r, reconcile.Options[string]{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		_ = c.Run(ctx)
		close(done)
	}()
	c.Add("k")
	<-started
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while a worker was still reconciling")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-done
	if !finished.Load() {
		t.Fatal("the reconcile did not finish")
	}
}

// Drain reconciles what is queued, and what that queues, on the caller's goroutine.
func TestDrain(t *testing.T) {
	var c *reconcile.Controller[string]
	var seen []string
	c = reconcile.New[string]("test", reconcile.Func[string](func(_ context.Context, key string) (reconcile.Result, error) {
		seen = append(seen, key)
		if key == "a" {
			c.Add("b")
		}
		return reconcile.Result{}, nil
	}), reconcile.Options[string]{})
	c.Add("a")
	c.Drain(t.Context())
	if strings.Join(seen, ",") != "a,b" || c.Len() != 0 {
		t.Errorf("drained %v, %d left", seen, c.Len())
	}
}

func TestTerminalError(t *testing.T) {
	base := errors.New("bad spec")
	err := reconcile.TerminalError(base)
	if !errors.Is(err, reconcile.ErrTerminal) || !errors.Is(err, base) || err.Error() != "bad spec" {
		t.Errorf("TerminalError(%v) = %v", base, err)
	}
	if reconcile.TerminalError(nil) != nil {
		t.Error("TerminalError(nil) is not nil")
	}
}

// Run reconciles nothing until every cache WaitFor names has synced.
func TestWaitFor(t *testing.T) {
	var synced atomic.Bool
	var waited atomic.Int32 // how often the gate was asked while closed
	calls := make(chan string, 1)
	c := reconcile.New[string]("test", reconcile.Func[string](func(_ context.Context, key string) (reconcile.Result, error) {
		if !synced.Load() {
			t.Errorf("reconciled %q before the cache synced", key)
		}
		calls <- key
		return reconcile.Result{}, nil
	}), reconcile.Options[string]{})
	c.WaitFor(func() bool {
		if synced.Load() {
			return true
		}
		if waited.Add(1) == 20 {
			synced.Store(true) // open the gate after Run has looked twenty times
		}
		return false
	})
	c.Add("k")
	stop := run(t, c)
	defer stop()
	select {
	case k := <-calls:
		if k != "k" || waited.Load() < 20 {
			t.Errorf("reconciled %q after %d looks at the gate", k, waited.Load())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing reconciled once the cache synced")
	}
}
