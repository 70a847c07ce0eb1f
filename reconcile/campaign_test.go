package reconcile_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/reconcile"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// refusingLock is a Lease lock whose writes fail while refuse is set, as they do
// when the API server cannot be reached.
type refusingLock struct {
	resourcelock.Interface
	refuse atomic.Bool
}

var errRefused = errors.New("refused")

func (l *refusingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if l.refuse.Load() {
		return errRefused
	}
	return l.Interface.Create(ctx, r)
}

func (l *refusingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if l.refuse.Load() {
		return errRefused
	}
	return l.Interface.Update(ctx, r)
}

// leadLog records which controllers of which process lead, and fails a test that sees
// a controller of one process start to lead while one of another process leads.
type leadLog struct {
	t       *testing.T
	mu      sync.Mutex
	leading map[string]int // "process/controller" -> leads running
	started chan string    // "process/controller", once per lead
}

func (l *leadLog) lead(process, controller string) func(ctx context.Context) {
	name := process + "/" + controller
	return func(ctx context.Context) {
		l.mu.Lock()
		for other, n := range l.leading {
			if n > 0 && other[:1] != process {
				l.t.Errorf("%s leads while %s does", name, other)
			}
		}
		l.leading[name]++
		l.mu.Unlock()
		l.started <- name
		<-ctx.Done()
		l.mu.Lock()
		l.leading[name]--
		l.mu.Unlock()
	}
}

// running returns how many leads of name run.
func (l *leadLog) running(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading[name]
}

// wait waits until each of want has started to lead (again); others that start
// meanwhile (a process that lost its lease on a starved machine and won it back) are
// not waited for.
func (l *leadLog) wait(want ...string) {
	l.t.Helper()
	missing := map[string]bool{}
	for _, w := range want {
		missing[w] = true
	}
	timeout := time.After(30 * time.Second)
	for len(missing) > 0 {
		select {
		case got := <-l.started:
			delete(missing, got)
		case <-timeout:
			l.t.Fatalf("not leading within 30s: %v", missing)
		}
	}
}

// waitFor polls cond until it holds, for 30s at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}

// Every controller that joins a campaign leads while its process leads, one that
// joins during a term at once, and one that leaves stops alone; the other process's
// controllers lead only once the first process has given the Lease up, which it does
// after its controllers' leads have returned; a campaign that loses its Lease stops
// every lead and leads again in a new term once it wins the Lease back; a campaign
// whose Run has returned refuses a controller that joins.
func TestCampaignLeadsEveryControllerTogether(t *testing.T) {
	client := fake.NewClientset()
	locks := map[string]*refusingLock{}
	newCampaign := func(holder string) *reconcile.Campaign {
		e := reconcile.LeaseElection(client.CoordinationV1(), "controllers", holder)
		locks[holder] = &refusingLock{Interface: e.Lock}
		e.Lock = locks[holder]
		e.LeaseDuration, e.RenewDeadline, e.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 100*time.Millisecond
		return reconcile.NewCampaign(e)
	}
	log := &leadLog{t: t, leading: map[string]int{}, started: make(chan string, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	join := func(c *reconcile.Campaign, ctx context.Context, process, controller string) chan error {
		done := make(chan error, 1)
		wg.Go(func() { done <- c.RunElected(ctx, log.lead(process, controller)) })
		return done
	}
	a, b := newCampaign("a"), newCampaign("b")
	join(a, ctx, "a", "gc")
	aCtx, stopA := context.WithCancel(ctx)
	aDone := make(chan error, 1)
	wg.Go(func() { aDone <- a.Run(aCtx) })
	log.wait("a/gc")
	quotaCtx, stopQuota := context.WithCancel(ctx)
	quotaDone := join(a, quotaCtx, "a", "quota")
	log.wait("a/quota")

	join(b, ctx, "b", "gc")
	join(b, ctx, "b", "quota")
	wg.Go(func() { _ = b.Run(ctx) })
	// A window in which b's controllers would lead if the campaign let them: leadLog
	// fails the test if one starts while one of a's leads.
	time.Sleep(3 * time.Second)
	stopQuota()
	if err := <-quotaDone; err != nil {
		t.Fatal(err)
	}
	if n := log.running("a/quota"); n != 0 {
		t.Fatalf("a/quota leads %d times after it left", n)
	}

	stopA()
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	log.wait("b/gc", "b/quota")
	if err := a.RunElected(ctx, func(context.Context) {}); !errors.Is(err, reconcile.ErrCampaignEnded) {
		t.Fatalf("joining a campaign whose Run returned: %v, want ErrCampaignEnded", err)
	}

	// b cannot renew its Lease: once its renew deadline has passed it has lost it, and
	// its leads end.
	locks["b"].refuse.Store(true)
	waitFor(t, "b's leads to end once it lost the Lease", func() bool {
		return log.running("b/gc") == 0 && log.running("b/quota") == 0
	})
	// It can write again: it wins the Lease back, and both its controllers lead in a
	// new term.
	locks["b"].refuse.Store(false)
	log.wait("b/gc", "b/quota")
}
