package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/reconcile"
	"k8s.io/client-go/kubernetes/fake"
)

// leadLog records which controllers of which process lead, and fails a test that sees
// two processes lead at once.
type leadLog struct {
	t       *testing.T
	mu      sync.Mutex
	leading map[string]int // process -> controllers leading
	started chan string    // "process/controller", once per lead
}

func (l *leadLog) lead(process, controller string) func(ctx context.Context) {
	return func(ctx context.Context) {
		l.mu.Lock()
		for p, n := range l.leading {
			if p != process && n > 0 {
				l.t.Errorf("%s/%s leads while %d controllers of %s do", process, controller, n, p)
			}
		}
		l.leading[process]++
		l.mu.Unlock()
		l.started <- process + "/" + controller
		<-ctx.Done()
		l.mu.Lock()
		l.leading[process]--
		l.mu.Unlock()
	}
}

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
			if !missing[got] {
				l.t.Fatalf("%s leads; waiting for %v", got, missing)
			}
			delete(missing, got)
		case <-timeout:
			l.t.Fatalf("not leading within 30s: %v", missing)
		}
	}
}

// Every controller that joins a campaign leads while its process leads, one that
// joins during a term at once; the other process's controllers lead only once the
// first process has given the lease up, after its controllers' leads returned; a
// controller's RunElected returns once its context is done and its lead has.
func TestCampaignLeadsEveryControllerTogether(t *testing.T) {
	client := fake.NewClientset()
	newCampaign := func(holder string) *reconcile.Campaign {
		e := reconcile.LeaseElection(client.CoordinationV1(), "controllers", holder)
		e.LeaseDuration, e.RenewDeadline, e.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 100*time.Millisecond
		return reconcile.NewCampaign(e)
	}
	log := &leadLog{t: t, leading: map[string]int{}, started: make(chan string, 16)}
	a, b := newCampaign("a"), newCampaign("b")
	join := func(c *reconcile.Campaign, ctx context.Context, process, controller string) chan error {
		done := make(chan error, 1)
		go func() { done <- c.RunElected(ctx, log.lead(process, controller)) }()
		return done
	}
	ctx := t.Context()
	join(a, ctx, "a", "gc")
	aCtx, stopA := context.WithCancel(ctx)
	aDone := make(chan error, 1)
	go func() { aDone <- a.Run(aCtx) }()
	log.wait("a/gc")
	quotaCtx, stopQuota := context.WithCancel(ctx)
	quotaDone := join(a, quotaCtx, "a", "quota")
	log.wait("a/quota")

	join(b, ctx, "b", "gc")
	join(b, ctx, "b", "quota")
	go func() { _ = b.Run(ctx) }()
	// b's controllers must not lead while a leads: a's lease is renewed meanwhile.
	select {
	case got := <-log.started:
		t.Fatalf("%s leads while a leads", got)
	case <-time.After(3 * time.Second):
	}

	stopQuota()
	if err := <-quotaDone; err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	if n := log.leading["a"]; n != 1 {
		t.Errorf("%d controllers of a lead after quota left, want 1", n)
	}
	log.mu.Unlock()

	stopA()
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	log.wait("b/gc", "b/quota")
}
