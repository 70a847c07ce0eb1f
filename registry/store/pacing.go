package store

import (
	"context"
	"time"

	"github.com/concordproject/concord/registry/watchcache"
	"k8s.io/apimachinery/pkg/watch"
)

// flushPacer decides when a watch flushes what it has sent: at once after a quiet
// interval, and at most once per interval while changes keep coming
// (Store.WatchFlushInterval). Each flush of a served watch is a write to its client,
// handed to the connection's goroutine and waited for: under a steady stream of
// changes, flushing every change costs a write per change and watcher, pacing one
// per interval. The watch sends its changes through the pacer (send), so that the
// pacer knows what is left to flush.
type flushPacer struct {
	out      Sink
	interval time.Duration
	// sent: events were sent since the last flush, made at last.
	sent bool
	last time.Time
	// timer waits out the rest of an interval: the pacing's own timer, made once.
	timer *time.Timer
}

// send sends ev to the Sink; false ends the watch.
func (p *flushPacer) send(ev watch.Event) bool {
	if !p.out.Send(ev) {
		return false
	}
	p.sent = true
	return true
}

// next flushes what was sent, when it is due, and returns the next changes of
// queue, waiting for them; false once the watch is to end.
func (p *flushPacer) next(ctx context.Context, queue *watchcache.Watcher) ([]*watchcache.Event, bool) {
	if p.sent {
		if wait := p.interval - time.Since(p.last); wait > 0 {
			if !p.wait(ctx, wait) {
				p.out.Flush() // the watch ends: what it sent goes out still
				return nil, false
			}
			// What came meanwhile goes out with the flush that is due now.
			if batch, _ := queue.TakeReady(); len(batch) > 0 {
				return batch, true
			}
		}
		if !p.out.Flush() {
			return nil, false
		}
		p.sent, p.last = false, time.Now()
	}
	return queue.Take(ctx)
}

// wait waits for d, or for ctx to be done (false).
func (p *flushPacer) wait(ctx context.Context, d time.Duration) bool {
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *flushPacer) stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}
