package watchcache

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/storage"
)

// A kept snapshot's entries that the cache has since replaced stay in memory, so they
// count in the caches' memory (and against their limit) until the snapshot goes: a
// storage migration that pages through a resource while rewriting it holds both
// versions of its objects for a while.
func TestKeptSnapshotsCountWhatTheyHold(t *testing.T) {
	ctx := t.Context()
	st, m := runCaches(t, "/snapshots", Options{HistorySize: 16}) // the history keeps few previous values
	const n, size = 200, 1024
	value := func(gen, i int) []byte {
		return append([]byte(fmt.Sprintf("%d-%04d-", gen, i)), bytes.Repeat([]byte("x"), size)...)
	}
	revs := make([]int64, n)
	for i := range n {
		rev, err := st.Create(ctx, fmt.Sprintf("objects/o-%04d", i), value(0, i))
		if err != nil {
			t.Fatal(err)
		}
		revs[i] = rev
	}
	var c *Cache
	waitFor(t, "a ready cache", func() bool { c = m.Get("objects/", 0); return c != nil && c.WaitReady(ctx) })
	rewrite := func(gen int) {
		t.Helper()
		var last int64
		for i := range n {
			rev, err := st.Update(ctx, fmt.Sprintf("objects/o-%04d", i), value(gen, i), revs[i])
			if err != nil {
				t.Fatal(err)
			}
			revs[i], last = rev, rev
		}
		if err := c.WaitFresh(ctx, last); err != nil {
			t.Fatal(err)
		}
	}

	// Without a kept snapshot, rewriting every object leaves the memory as it was.
	rewrite(1)
	base := m.Stats().Bytes
	rewrite(2)
	if got := m.Stats().Bytes; got > base+4*size || got < base-4*size {
		t.Fatalf("rewriting %d objects with no kept snapshot: %d bytes, was %d", n, got, base)
	}

	// Kept (a paged list's), the snapshot holds every value rewritten since.
	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	c.Keep(snap)
	rewrite(3)
	held := m.Stats().Bytes - base
	if held < n*size {
		t.Fatalf("with a kept snapshot, rewriting %d objects of %d bytes added %d bytes, want at least %d", n, size, held, n*size)
	}
	rewrite(4) // its values are the snapshot's no longer: nothing more is held
	if again := m.Stats().Bytes - base; again > held+4*size {
		t.Fatalf("a second rewrite added %d bytes more to the %d the snapshot holds", again-held, held)
	}
	if items := snap.Items("objects/"); len(items) != n || !bytes.HasPrefix(items[0].Value, []byte("2-")) {
		t.Fatalf("the snapshot changed: %d items, the first %q", len(items), items[0].Value[:8])
	}

	// Gone, it holds nothing.
	c.expireSnapshots(time.Now().Add(time.Hour))
	if got := m.Stats().Bytes; got > base+4*size || got < base-4*size {
		t.Fatalf("after the snapshot went: %d bytes, want about %d", got, base)
	}
}

// runCaches runs the caches of a store under prefix on a fresh etcd until the test
// ends.
func runCaches(t *testing.T, prefix string, opts Options) (*storage.Store, *Caches) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	st := storage.New(etcdtest.Start(t), prefix)
	m := New(st)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, opts) }()
	t.Cleanup(func() { cancel(); <-done })
	return st, m
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10s", what)
		}
	}
}

// A snapshot's pages read from a start key, within a prefix, and stop at the limit;
// Running finds only a cache that was started and has loaded.
func TestSnapshotPagesAndRunning(t *testing.T) {
	ctx := t.Context()
	st, m := runCaches(t, "/pages", Options{})
	for _, k := range []string{"a/x", "b/1", "b/2", "b/3", "b/4", "c/y"} {
		if _, err := st.Create(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "caches running", func() bool { return m.Get("unused/", 0) != nil })
	if c := m.Running("b/"); c != nil {
		t.Fatal("Running returned a cache nobody started")
	}
	var c *Cache
	waitFor(t, "a ready cache", func() bool { c = m.Get("", 0); return c != nil && c.WaitReady(ctx) })
	if m.Running("") != c {
		t.Fatal("Running did not return the loaded cache")
	}
	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	keys := func(items []*Entry) (out []string) {
		for _, e := range items {
			out = append(out, e.Key)
		}
		return out
	}
	for _, tc := range []struct {
		start string
		limit int
		want  string
		more  bool
	}{
		{"", 2, "[b/1 b/2]", true},
		{"b/2\x00", 2, "[b/3 b/4]", false},
		{"b/4\x00", 2, "[]", false},
		{"b/3", 5, "[b/3 b/4]", false},
		{"a/", 4, "[b/1 b/2 b/3 b/4]", false},
	} {
		items, more := snap.Page("b/", tc.start, tc.limit)
		if got := fmt.Sprint(keys(items)); got != tc.want || more != tc.more {
			t.Errorf("Page(b/, %q, %d) = %s more=%v, want %s more=%v", tc.start, tc.limit, got, more, tc.want, tc.more)
		}
	}
}

// A kept snapshot that comes to hold more replaced values than SnapshotHold is let
// go: the cache no longer has its revision (a paged list's next pages read etcd), and
// the memory it held leaves the count.
func TestKeptSnapshotHoldsABoundedAmount(t *testing.T) {
	ctx := t.Context()
	st, m := runCaches(t, "/bounded", Options{HistorySize: 16, SnapshotHold: 32 << 10})
	const n, size = 100, 1024
	value := bytes.Repeat([]byte("x"), size)
	revs := make([]int64, n)
	for i := range n {
		rev, err := st.Create(ctx, fmt.Sprintf("objects/o-%04d", i), value)
		if err != nil {
			t.Fatal(err)
		}
		revs[i] = rev
	}
	var c *Cache
	waitFor(t, "a ready cache", func() bool { c = m.Get("objects/", 0); return c != nil && c.WaitReady(ctx) })
	if err := c.WaitFresh(ctx, revs[n-1]); err != nil {
		t.Fatal(err)
	}
	base := m.Stats().Bytes
	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	c.Keep(snap)
	rewrite := func(count int) {
		t.Helper()
		for i := range count {
			rev, err := st.Update(ctx, fmt.Sprintf("objects/o-%04d", i), append([]byte("new-"), value...), revs[i])
			if err != nil {
				t.Fatal(err)
			}
			revs[i] = rev
		}
		if err := c.WaitFresh(ctx, revs[count-1]); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(8) // 8 KiB held: kept
	if _, ok := c.SnapshotAt(snap.Rev); !ok {
		t.Fatal("the snapshot went while it held less than its bound")
	}
	rewrite(n) // 100 KiB: past the bound
	if _, ok := c.SnapshotAt(snap.Rev); ok {
		t.Fatal("the snapshot is still kept holding more than its bound")
	}
	// Kept, it would hold all n replaced values; what is left is the history's (its
	// events carry their previous values).
	if got := m.Stats().Bytes - base; got > n*size/2 {
		t.Fatalf("after the snapshot went the caches count %d bytes more than before it, want under %d", got, n*size/2)
	}
}
