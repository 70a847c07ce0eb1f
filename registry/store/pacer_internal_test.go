package store

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// A paced watch delivers at most the limit of changes its handlers have not taken;
// each Handled lets one more through; a bookmark waits its turn behind them; the end
// of its context releases a waiting delivery.
func TestPacerHoldsTheWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	src := watch.NewFakeWithChanSize(100, false)
	p := NewPacer(3)
	w := p.paced(ctx, src)
	defer w.Stop()
	for range 10 {
		src.Add(&corev1.ConfigMap{})
	}
	src.Action(watch.Bookmark, &corev1.ConfigMap{})
	// received reads want changes, then checks that the pacer let no more through:
	// delivered changes are counted before they pass.
	received := func(want int, delivered int64) {
		t.Helper()
		for got := 0; got < want; got++ {
			select {
			case e := <-w.ResultChan():
				if e.Type == watch.Bookmark {
					t.Fatalf("the bookmark passed before change %d of %d", got+1, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%d changes delivered, want %d", got, want)
			}
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.delivered != delivered {
			t.Fatalf("the pacer let %d changes through, want %d (handled %d)", p.delivered, delivered, p.handled)
		}
	}
	received(3, 3)
	p.Handled()
	p.Handled()
	received(2, 5)
	for range 3 {
		p.Handled()
	}
	received(3, 8)
	for range 3 {
		p.Handled()
	}
	received(2, 10) // the last two changes; the bookmark follows them
	if e := <-w.ResultChan(); e.Type != watch.Bookmark {
		t.Fatalf("after the changes: %v, want the bookmark", e.Type)
	}
	// Handled beyond what was delivered gives no credit: handled 10, not 28.
	for range 20 {
		p.Handled()
	}
	for range 5 {
		src.Add(&corev1.ConfigMap{})
	}
	received(3, 13)
	// A delivery waiting for room gives up once the watch's context ends, so that the
	// watch ends when its source does.
	cancel()
	src.Stop()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("a held change passed once the context ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the paced watch did not end with its source, a change held after its context ended")
	}
}
