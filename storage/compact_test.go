package storage_test

import (
	"errors"
	"testing"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/storage"
)

// TestCompactStepTakesTurns: two servers sharing an etcd take turns through
// storage.CompactionKey; the one whose turn it is compacts the history before the
// revision of its previous turn, and a server's first turn compacts nothing.
func TestCompactStepTakesTurns(t *testing.T) {
	ctx := t.Context()
	client := etcdtest.Start(t)
	a, b := storage.New(client, "/a"), storage.New(client, "/b")
	step := func(s *storage.Store, last storage.Compaction) (storage.Compaction, int64) {
		t.Helper()
		next, compacted, err := s.CompactStep(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		return next, compacted
	}

	a1, compacted := step(a, storage.Compaction{})
	if compacted != 0 || a1.KeyVersion != 1 || a1.Revision == 0 {
		t.Fatalf("a's first turn: %+v, compacted %d; want the key advanced to version 1 and nothing compacted", a1, compacted)
	}
	b1, compacted := step(b, storage.Compaction{})
	if compacted != 0 || b1.KeyVersion != 1 {
		t.Fatalf("b's first turn: %+v, compacted %d; want a's version learnt and nothing compacted", b1, compacted)
	}

	rev1, err := a.Create(ctx, "x", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Update(ctx, "x", []byte("2"), rev1); err != nil {
		t.Fatal(err)
	}

	a2, compacted := step(a, a1)
	if compacted != a1.Revision || a2.KeyVersion != 2 {
		t.Fatalf("a's second turn: %+v, compacted %d; want the history before %d compacted", a2, compacted, a1.Revision)
	}
	if _, err := a.GetAt(ctx, "x", a1.Revision-1); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("a read before the compacted revision: %v, want ErrCompacted", err)
	}
	if kv, err := a.GetAt(ctx, "x", rev1); err != nil || string(kv.Value) != "1" {
		t.Fatalf("the history after the compacted revision: %+v %v, want it kept", kv, err)
	}

	b2, compacted := step(b, b1)
	if compacted != 0 || b2.KeyVersion != 2 {
		t.Fatalf("b's turn after a took it: %+v, compacted %d; want a's version learnt", b2, compacted)
	}
	b3, compacted := step(b, b2)
	if compacted != b2.Revision || b3.KeyVersion != 3 {
		t.Fatalf("b's next turn: %+v, compacted %d; want the history before %d compacted", b3, compacted, b2.Revision)
	}
	if _, err := a.GetAt(ctx, "x", rev1); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("a read before b's compaction: %v, want ErrCompacted", err)
	}
}
