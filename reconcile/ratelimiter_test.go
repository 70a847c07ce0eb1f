package reconcile

import (
	"testing"
	"time"
)

// A controller's Backoff spaces a failing key's retries from Base, doubling, and
// never beyond Max however often it fails; a success (Forget) starts again at Base.
func TestBackoffBoundsRetries(t *testing.T) {
	rl := rateLimiter[string](Backoff{Base: 100 * time.Millisecond, Max: 8 * time.Second})
	var got []time.Duration
	for range 12 {
		got = append(got, rl.When("ns"))
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 8000, 8000, 8000, 8000, 8000}
	for i, w := range want {
		if got[i] != w*time.Millisecond {
			t.Fatalf("retry %d after %v, want %v (all: %v)", i+1, got[i], w*time.Millisecond, got)
		}
	}
	if other := rl.When("other"); other != 100*time.Millisecond {
		t.Errorf("another key's first retry after %v, want 100ms", other)
	}
	rl.Forget("ns")
	if again := rl.When("ns"); again != 100*time.Millisecond {
		t.Errorf("after a success, the first retry after %v, want 100ms", again)
	}
}
