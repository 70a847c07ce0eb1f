package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// client-go leader election over coordination.k8s.io/v1 leases, candidates on
// different servers: one leads at a time, and the other takes over when it stops.
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	var leading atomic.Int32
	var leaders atomic.Int32
	type candidate struct {
		cancel  context.CancelFunc
		stopped chan struct{}
		led     chan struct{}
	}
	start := func(i int) *candidate {
		ctx, cancel := context.WithCancel(t.Context())
		cand := &candidate{cancel: cancel, stopped: make(chan struct{}), led: make(chan struct{})}
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "concord-test"},
			Client:     c.Servers[i].Clientset(t).CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: fmt.Sprint("candidate-", i)},
		}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 5 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: 200 * time.Millisecond,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					if leading.Add(1) > 1 {
						t.Errorf("two leaders at once")
					}
					leaders.Add(1)
					close(cand.led)
				},
				OnStoppedLeading: func() { leading.Add(-1) },
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		go func() { le.Run(ctx); close(cand.stopped) }()
		return cand
	}
	a := start(0)
	select {
	case <-a.led:
	case <-time.After(10 * time.Second):
		t.Fatal("no leader within 10s")
	}
	b := start(1)
	time.Sleep(500 * time.Millisecond)
	if leaders.Load() != 1 {
		t.Fatalf("%d leaders while the first still leads", leaders.Load())
	}
	a.cancel()
	<-a.stopped
	select {
	case <-b.led:
	case <-time.After(10 * time.Second):
		t.Fatal("the second candidate did not take over")
	}
	b.cancel()
	<-b.stopped
}
