package storage

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrGuardChanged means that a guarded write was not made because the key guarding it
// was no longer at the revision the caller held it to (GuardChangedError).
var ErrGuardChanged = errors.New("guard key changed")

// Guard holds writes to the state of another key: a guarded write is made only if Key
// is still at Revision (its mod revision; 0 for an absent key), in the same etcd
// transaction as the write's own precondition. A writer that read Key at Revision and
// decided what to write from it so never writes after Key changed.
type Guard struct {
	Key      string
	Revision int64
}

// GuardChangedError is the error of each write a guard stopped. It matches
// ErrGuardChanged with errors.Is.
type GuardChangedError struct {
	Guard Guard
	// Key is the key the stopped write was for.
	Key string
}

func (e *GuardChangedError) Error() string {
	return fmt.Sprintf("%s not written: %v (%s is no longer at revision %d)", e.Key, ErrGuardChanged, e.Guard.Key, e.Guard.Revision)
}

// Is makes a GuardChangedError match ErrGuardChanged.
func (e *GuardChangedError) Is(target error) bool { return target == ErrGuardChanged }

// WriteBatchGuarded is WriteBatch with every transaction also conditioned on guard:
// once guard's key has moved, no write of the batch is made any more, and each write
// not made reports a *GuardChangedError. Writes made before the key moved stay made
// and report their revision, as in WriteBatch; a write that met a conflict reports it
// only if the guard still held. It is the storage-migration fast path under a
// resource's StorageVersion: no object is rewritten once the servers' storage
// versions changed.
func (s *Store) WriteBatchGuarded(ctx context.Context, guard Guard, writes []Write) ([]int64, []error) {
	return s.writeBatch(ctx, &guard, writes)
}

// guardedTxn commits ops under cmps, the whole conditioned on guard. held reports
// whether the guard held; inner is the answer of the conditioned transaction (nil if
// the guard failed); err is etcd's, untranslated.
func (s *Store) guardedTxn(ctx context.Context, guard Guard, cmps []clientv3.Cmp, ops, orElse []clientv3.Op) (rev int64, held bool, inner *clientv3.TxnResponse, err error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(s.abs(guard.Key)), "=", guard.Revision)).
		Then(clientv3.OpTxn(cmps, ops, orElse)).
		Commit()
	if err != nil {
		return 0, false, nil, err
	}
	if !resp.Succeeded {
		return 0, false, nil, nil
	}
	return resp.Header.Revision, true, (*clientv3.TxnResponse)(resp.Responses[0].GetResponseTxn()), nil
}

// guardedWrite makes one write of a batch under guard, in its own transaction.
func (s *Store) guardedWrite(ctx context.Context, guard Guard, w Write) (int64, error) {
	op, err := s.batchOp(ctx, w)
	if err != nil {
		return 0, err
	}
	k := s.abs(w.Key)
	cmp := clientv3.Compare(clientv3.ModRevision(k), "=", w.Expected)
	rev, held, inner, err := s.guardedTxn(ctx, guard, []clientv3.Cmp{cmp}, []clientv3.Op{op}, []clientv3.Op{clientv3.OpGet(k)})
	switch {
	case err != nil:
		return 0, translate(err)
	case !held:
		return 0, &GuardChangedError{Guard: guard, Key: w.Key}
	case !inner.Succeeded:
		return 0, s.conflict(ctx, w.Key, inner)
	}
	return rev, nil
}
