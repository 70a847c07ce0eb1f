package memory

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	for _, tc := range []struct{ live, ceiling, want int64 }{
		{0, 8 << 30, MinHeadroom},
		{100 << 20, 8 << 30, 100<<20 + MinHeadroom},
		{512 << 20, 8 << 30, 1 << 30},      // as much again
		{3 << 30, 16 << 30, 3<<30 + 2<<30}, // 1 GiB, then half of the 2 GiB beyond
		{6 << 30, 8 << 30, 8 << 30},        // never above the ceiling
		{100 << 20, 200 << 20, 200 << 20},  // a small machine
	} {
		if got := Limit(tc.live, tc.ceiling); got != tc.want {
			t.Errorf("Limit(%d MiB, %d MiB) = %d MiB, want %d MiB", tc.live>>20, tc.ceiling>>20, got>>20, tc.want>>20)
		}
	}
}

func TestDefaultCeiling(t *testing.T) {
	c, err := DefaultCeiling()
	if err != nil {
		t.Skip(err)
	}
	if c < 64<<20 {
		t.Errorf("ceiling %d bytes: the machine has more than that", c)
	}
}

// Apply follows the live heap: after a collection the soft limit is the live heap
// plus headroom.
func TestApplyFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	stop := Apply(64 << 30)
	t.Cleanup(func() {
		stop()
		debug.SetMemoryLimit(math.MaxInt64)
		debug.SetGCPercent(100)
	})
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GC percent %d, want off (-1)", got)
	}
	live := make([][]byte, 0, 400)
	for range 400 {
		live = append(live, make([]byte, 1<<20)) // 400 MiB kept alive
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		limit := debug.SetMemoryLimit(-1)
		if limit >= 800<<20 && limit < 800<<20+128<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("soft limit %d MiB with 400 MiB live, want about 800 MiB", limit>>20)
		}
		time.Sleep(10 * time.Millisecond) // the cleanup runs on its own goroutine after the collection
	}
	runtime.KeepAlive(live)
}
