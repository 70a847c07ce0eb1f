package progress

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf ends only the Wait under test, by a panic
// that run recovers, so that a test can see that Wait gave up.
type recorder struct{ testing.TB }

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(string, ...any) { panic(errFatal) }

var errFatal = errors.New("fatal")

// run calls Wait with r and reports whether it failed.
func run(r *recorder, l Limits, cond func() (bool, string, error)) (failed bool) {
	defer func() {
		if p := recover(); p != nil {
			if err, ok := p.(error); !ok || !errors.Is(err, errFatal) {
				panic(p)
			}
			failed = true
		}
	}()
	Wait(r, "work", l, cond)
	return false
}

func TestWaitWaitsWhileTheMarkMoves(t *testing.T) {
	// Done after 0.6s, far past the stall, but the mark changes at every look.
	start, n := time.Now(), 0
	r := &recorder{TB: t}
	if run(r, Limits{Stall: 200 * time.Millisecond}, func() (bool, string, error) {
		n++
		return time.Since(start) > 600*time.Millisecond, strconv.Itoa(n), nil
	}) {
		t.Fatal("Wait gave up on work that moved")
	}
}

func TestWaitGivesUpOnAStall(t *testing.T) {
	r := &recorder{TB: t}
	start := time.Now()
	if !run(r, Limits{Stall: 200 * time.Millisecond}, func() (bool, string, error) { return false, "same", nil }) {
		t.Fatal("Wait did not give up on a mark that never moved")
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("gave up after %v, before the stall", d)
	}
}

func TestWaitGivesUpAtTheBound(t *testing.T) {
	r := &recorder{TB: t}
	n := 0
	if !run(r, Limits{Stall: time.Minute, Bound: 300 * time.Millisecond}, func() (bool, string, error) {
		n++
		return false, strconv.Itoa(n), nil
	}) {
		t.Fatal("Wait did not give up at its bound on work that moved forever")
	}
}

func TestWaitFailsOnAnError(t *testing.T) {
	r := &recorder{TB: t}
	if !run(r, Limits{Stall: time.Minute}, func() (bool, string, error) { return false, "", errors.New("broken") }) {
		t.Fatal("Wait did not fail on the condition's error")
	}
}
