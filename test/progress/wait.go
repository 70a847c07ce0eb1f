package progress

import (
	"testing"
	"time"
)

// interval is how often Wait looks again.
const interval = 50 * time.Millisecond

// Limits are when Wait gives up: Stall without a change of the mark, or Bound in all
// (0: no bound but the test's own timeout).
type Limits struct {
	Stall, Bound time.Duration
}

// Wait polls cond until it reports done. It fails the test when cond returns an error,
// when the mark cond reports (what the awaited work has done so far) has not changed
// for l.Stall, or after l.Bound.
func Wait(t testing.TB, what string, l Limits, cond func() (done bool, mark string, err error)) {
	t.Helper()
	start := time.Now()
	last, moved := "", start
	for {
		done, mark, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if done {
			return
		}
		now := time.Now()
		if mark != last {
			last, moved = mark, now
		}
		if now.Sub(moved) > l.Stall || (l.Bound > 0 && now.Sub(start) > l.Bound) {
			t.Fatalf("waiting for %s: given up after %v, nothing moved in the last %v, at %s",
				what, now.Sub(start).Round(time.Second), now.Sub(moved).Round(time.Second), mark)
		}
		time.Sleep(interval)
	}
}
