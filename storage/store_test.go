package storage_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/storage"
)

func newStore(t *testing.T) *storage.Store {
	t.Helper()
	return storage.New(etcdtest.Start(t), "/test")
}

func TestCreateUpdateDelete(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	rev, err := s.Create(ctx, "a/b/x", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "a/b/x", []byte("2")); !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	rev2, err := s.Update(ctx, "a/b/x", []byte("2"), rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("update: %d %v", rev2, err)
	}
	// A stale update carries the current value.
	_, err = s.Update(ctx, "a/b/x", []byte("3"), rev)
	var ce *storage.ConflictError
	if !errors.Is(err, storage.ErrConflict) || !errors.As(err, &ce) || string(ce.Current.Value) != "2" || ce.Current.Revision != rev2 {
		t.Fatalf("stale update: %v", err)
	}
	kv, err := s.Get(ctx, "a/b/x")
	if err != nil || string(kv.Value) != "2" || kv.Revision != rev2 || kv.CreateRevision != rev || kv.Key != "a/b/x" {
		t.Fatalf("get: %+v %v", kv, err)
	}
	if _, err := s.Delete(ctx, "a/b/x", rev); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale delete: %v", err)
	}
	if _, err := s.Delete(ctx, "a/b/x", rev2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a/b/x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := s.Update(ctx, "a/b/x", []byte("4"), rev2); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update of a deleted key: %v", err)
	}
	// Old revisions stay readable until compacted.
	if old, err := s.GetAt(ctx, "a/b/x", rev); err != nil || string(old.Value) != "1" {
		t.Fatalf("get at %d: %+v %v", rev, old, err)
	}
}

func TestListPagesAndContinueTokens(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	for i := 0; i < 7; i++ {
		if _, err := s.Create(ctx, fmt.Sprintf("g/r/%d", i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, "g/rr/outside", nil); err != nil { // a sibling prefix must not leak in
		t.Fatal(err)
	}
	page, err := s.List(ctx, "g/r", storage.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 3 || !page.More || page.Remaining != 4 {
		t.Fatalf("first page: %d items more=%v remaining=%d", len(page.Items), page.More, page.Remaining)
	}
	token, err := storage.EncodeContinue("g/r", page.Items[2].Key+"\x00", page.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "g/r/9", nil); err != nil { // after the snapshot
		t.Fatal(err)
	}
	start, rev, err := storage.DecodeContinue("g/r", token)
	if err != nil || rev != page.Revision {
		t.Fatalf("decode: %q %d %v", start, rev, err)
	}
	rest, err := s.List(ctx, "g/r", storage.ListOptions{Revision: rev, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Items) != 4 || rest.More {
		t.Fatalf("rest of the snapshot: %d items", len(rest.Items))
	}
	if n, err := s.Count(ctx, "g/r"); err != nil || n != 8 {
		t.Fatalf("count: %d %v", n, err)
	}
	for _, bad := range []string{"", "!!!", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiIifQ"} {
		if _, _, err := storage.DecodeContinue("g/r", bad); !errors.Is(err, storage.ErrInvalidContinue) {
			t.Fatalf("token %q: %v", bad, err)
		}
	}
	if _, err := storage.EncodeContinue("g/r", "other/key", 5); !errors.Is(err, storage.ErrInvalidContinue) {
		t.Fatalf("token outside the prefix: %v", err)
	}
}

func TestCompactedReadsAndWatches(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	rev, _ := s.Create(ctx, "w/r/a", []byte("1"))
	if _, err := s.Update(ctx, "w/r/a", []byte("2"), rev); err != nil {
		t.Fatal(err)
	}
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "w/r", storage.ListOptions{Revision: rev}); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("list at a compacted revision: %v", err)
	}
	ev := <-s.Watch(ctx, "w/r", rev-1, storage.WatchOptions{})
	if ev.Type != storage.Error || !errors.Is(ev.Err, storage.ErrCompacted) {
		t.Fatalf("watch from a compacted revision: %+v", ev)
	}
	if _, err := s.List(ctx, "w/r", storage.ListOptions{Revision: cur + 100}); !errors.Is(err, storage.ErrFutureRevision) {
		t.Fatalf("list in the future: %v", err)
	}
}

func TestWatchOrderAndPrev(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	base, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := s.Watch(ctx, "v/r", base, storage.WatchOptions{ProgressInterval: 100 * time.Millisecond})
	rev, _ := s.Create(ctx, "v/r/a", []byte("1"))
	rev2, _ := s.Update(ctx, "v/r/a", []byte("2"), rev)
	_, _ = s.Create(ctx, "v/other/x", []byte("ignored"))
	_, _ = s.Delete(ctx, "v/r/a", rev2)
	want := []struct {
		typ  storage.EventType
		val  string
		prev string
	}{{storage.Put, "1", ""}, {storage.Put, "2", "1"}, {storage.Deleted, "", "2"}}
	for i, w := range want {
		var ev storage.Event
		for {
			select {
			case ev = <-events:
			case <-time.After(30 * time.Second):
				t.Fatalf("event %d did not arrive", i)
			}
			if ev.Type != storage.Progress {
				break
			}
		}
		prev := ""
		if ev.Prev != nil {
			prev = string(ev.Prev.Value)
		}
		if ev.Type != w.typ || string(ev.KV.Value) != w.val || prev != w.prev {
			t.Fatalf("event %d: %+v, want %+v", i, ev, w)
		}
	}
	// Idle: progress notifications carry the current revision.
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == storage.Progress && ev.Revision >= rev2 {
				return
			}
		case <-deadline:
			t.Fatal("no progress notification while idle")
		}
	}
}

func TestWriteBatch(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	var writes []storage.Write
	for i := 0; i < 300; i++ {
		key := fmt.Sprintf("b/r/%03d", i)
		rev, err := s.Create(ctx, key, []byte("old"))
		if err != nil {
			t.Fatal(err)
		}
		writes = append(writes, storage.Write{Key: key, Value: []byte("new"), Expected: rev})
	}
	// One key moves under the batch; it alone must fail.
	if _, err := s.Update(ctx, "b/r/150", []byte("moved"), writes[150].Expected); err != nil {
		t.Fatal(err)
	}
	writes[299].Value = nil // a delete in the batch
	revs, errs := s.WriteBatch(ctx, writes)
	for i := range writes {
		switch {
		case i == 150:
			if !errors.Is(errs[i], storage.ErrConflict) {
				t.Fatalf("moved key: %v", errs[i])
			}
		case errs[i] != nil || revs[i] == 0:
			t.Fatalf("write %d: %d %v", i, revs[i], errs[i])
		}
	}
	if kv, _ := s.Get(ctx, "b/r/000"); string(kv.Value) != "new" {
		t.Fatalf("batch write not applied: %q", kv.Value)
	}
	if kv, _ := s.Get(ctx, "b/r/150"); string(kv.Value) != "moved" {
		t.Fatalf("conflicting key overwritten: %q", kv.Value)
	}
	if _, err := s.Get(ctx, "b/r/299"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("batch delete: %v", err)
	}
}
