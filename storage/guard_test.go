package storage_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/concordproject/concord/storage"
)

// A guarded batch writes while its guard key stays put, reports conflicts of its own
// keys as WriteBatch does, and writes nothing once the guard key moved: each write
// reports ErrGuardChanged, and the keys keep their values.
func TestWriteBatchGuarded(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	guardRev, err := s.Create(ctx, "g/sv", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	guard := storage.Guard{Key: "g/sv", Revision: guardRev}
	writes := make([]storage.Write, 200)
	for i := range writes {
		key := fmt.Sprintf("g/r/%03d", i)
		rev, err := s.Create(ctx, key, []byte("old"))
		if err != nil {
			t.Fatal(err)
		}
		writes[i] = storage.Write{Key: key, Value: []byte("new"), Expected: rev}
	}
	// One key of the first batch moves: it alone fails, the guard still holding.
	if _, err := s.Update(ctx, "g/r/010", []byte("moved"), writes[10].Expected); err != nil {
		t.Fatal(err)
	}
	revs, errs := s.WriteBatchGuarded(ctx, guard, writes[:100])
	for i := range 100 {
		switch {
		case i == 10:
			if !errors.Is(errs[i], storage.ErrConflict) {
				t.Fatalf("moved key: %v", errs[i])
			}
		case errs[i] != nil || revs[i] == 0:
			t.Fatalf("write %d under a holding guard: %d %v", i, revs[i], errs[i])
		}
	}

	// The guard moves: nothing more is written, in the batch's transaction or in the
	// per-write fallback a moved key of the batch leads to.
	if _, err := s.Update(ctx, "g/sv", []byte("v2"), guardRev); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "g/r/150", []byte("moved"), writes[150].Expected); err != nil {
		t.Fatal(err)
	}
	_, errs = s.WriteBatchGuarded(ctx, guard, writes[100:])
	for i, err := range errs {
		var gce *storage.GuardChangedError
		if !errors.Is(err, storage.ErrGuardChanged) || !errors.As(err, &gce) || gce.Key != writes[100+i].Key {
			t.Fatalf("write %d after the guard moved: %v", 100+i, err)
		}
	}
	for i := 100; i < 200; i++ {
		kv, err := s.Get(ctx, writes[i].Key)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "moved", false: "old"}[i == 150]; string(kv.Value) != want {
			t.Fatalf("%s = %q after the guard moved, want %q", writes[i].Key, kv.Value, want)
		}
	}
}

// Each transaction of a batch carries as many writes as etcd takes in one (its
// default --max-txn-ops, 128; under a guard, whose transaction nests the writes',
// 127): the writes of a transaction share its revision.
func TestWriteBatchTransactionsAreFull(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	guardRev, err := s.Create(ctx, "f/sv", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		guard *storage.Guard
		n     int
		txns  int
	}{
		{nil, 256, 2},
		{nil, 257, 3},
		{&storage.Guard{Key: "f/sv", Revision: guardRev}, 254, 2},
		{&storage.Guard{Key: "f/sv", Revision: guardRev}, 256, 3},
	} {
		writes := make([]storage.Write, tc.n)
		for i := range writes {
			key := fmt.Sprintf("f/%v/%d/%03d", tc.guard != nil, tc.n, i)
			rev, err := s.Create(ctx, key, []byte("old"))
			if err != nil {
				t.Fatal(err)
			}
			writes[i] = storage.Write{Key: key, Value: []byte("new"), Expected: rev}
		}
		var revs []int64
		var errs []error
		if tc.guard != nil {
			revs, errs = s.WriteBatchGuarded(ctx, *tc.guard, writes)
		} else {
			revs, errs = s.WriteBatch(ctx, writes)
		}
		txns := map[int64]bool{}
		for i := range writes {
			if errs[i] != nil {
				t.Fatalf("guarded %v, %d writes: write %d: %v", tc.guard != nil, tc.n, i, errs[i])
			}
			txns[revs[i]] = true
		}
		if len(txns) != tc.txns {
			t.Errorf("guarded %v: %d writes took %d transactions, want %d", tc.guard != nil, tc.n, len(txns), tc.txns)
		}
	}
}
