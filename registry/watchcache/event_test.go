package watchcache_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/concordproject/concord/registry/watchcache"
)

type decoded struct{ n int }

// MemoWeak builds a value once while it is in use, again once it has been collected,
// and keeps a failure.
func TestMemoWeak(t *testing.T) {
	ev := &watchcache.Event{}
	builds := 0
	build := func() (*decoded, error) { builds++; return &decoded{n: builds}, nil }
	func() { // the values go out of use when it returns
		a, err := watchcache.MemoWeak(ev, "k", build)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := watchcache.MemoWeak(ev, "k", build)
		if a != b || builds != 1 {
			t.Fatalf("while in use: %p and %p, %d builds; want one value built once", a, b, builds)
		}
		if other, _ := watchcache.MemoWeak(ev, "other", build); other == a {
			t.Fatal("another key shares the value")
		}
	}()
	for i := 0; i < 10 && builds < 3; i++ {
		runtime.GC()
		if _, err := watchcache.MemoWeak(ev, "k", build); err != nil {
			t.Fatal(err)
		}
	}
	if builds < 3 {
		t.Fatalf("after the value was dropped and collected: %d builds, want it built again", builds)
	}

	failed := errors.New("undecodable")
	calls := 0
	for range 2 {
		if _, err := watchcache.MemoWeak(ev, "bad", func() (*decoded, error) { calls++; return nil, failed }); !errors.Is(err, failed) {
			t.Fatalf("a failed build answered %v", err)
		}
	}
	if calls != 1 {
		t.Errorf("a failed build ran %d times, want once", calls)
	}
}
