package storage

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Update writes value at key if and only if key is still at revision expected, in one
// transaction, and returns the new revision. If the key moved or vanished it returns a
// *ConflictError carrying the current value (nil if gone), which matches ErrConflict
// (or ErrNotFound) under errors.Is.
func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64, opts ...WriteOption) (int64, error) {
	k := s.abs(key)
	defer s.observe("update", key, time.Now())
	put, err := s.putOp(ctx, k, value, opts)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", expected)).
		Then(put).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return 0, translate(err)
	}
	if !resp.Succeeded {
		return 0, s.conflict(ctx, key, resp)
	}
	return resp.Header.Revision, nil
}

// conflict is the ConflictError of a failed conditional write, carrying the current
// value (or the error opening it).
func (s *Store) conflict(ctx context.Context, key string, resp *clientv3.TxnResponse) error {
	ce := &ConflictError{Key: key}
	if len(resp.Responses) > 0 {
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			kv, err := s.kv(ctx, kvs[0])
			if err != nil {
				return err
			}
			ce.Current = kv
		}
	}
	return ce
}

// Write is one conditional write of a batch: Value replaces the key if it is still at
// Expected. A nil Value deletes the key instead.
type Write struct {
	Key      string
	Value    []byte
	Expected int64
}

// WriteBatch applies writes in as few transactions as etcd allows, each write
// conditioned on its own expected revision, and reports per write the new revision or
// the error (a *ConflictError for a moved key). Writes are independent: one conflict
// does not stop the others. It is the storage-migration fast path.
func (s *Store) WriteBatch(ctx context.Context, writes []Write) ([]int64, []error) {
	return s.writeBatch(ctx, nil, writes)
}

// maxBatchOps is how many writes one transaction of a batch carries: etcd's default
// --max-txn-ops. A guarded batch's transaction nests the writes' transaction in the
// guard's, which counts one of the limit (etcd refuses 128 nested under one).
const (
	maxBatchOps   = 128
	maxGuardedOps = maxBatchOps - 1
)

// batchParallel is how many transactions of one batch are in flight at once: etcd
// commits concurrent transactions together, so the writes of a page wait for one
// round of consensus and fsync rather than one per transaction.
const batchParallel = 4

// writeBatch is WriteBatch, every transaction also conditioned on guard if it is not
// nil (WriteBatchGuarded).
func (s *Store) writeBatch(ctx context.Context, guard *Guard, writes []Write) ([]int64, []error) {
	revs := make([]int64, len(writes))
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	slots := make(chan struct{}, batchParallel)
	group := maxBatchOps
	if guard != nil {
		group = maxGuardedOps
	}
	for start := 0; start < len(writes); start += group {
		end := min(start+group, len(writes))
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			s.writeGroup(ctx, guard, writes[start:end], revs[start:end], errs[start:end])
		})
	}
	wg.Wait()
	return revs, errs
}

// writeGroup makes the writes of one transaction, setting revs and errs (of the same
// length). A transaction whose compares all hold applies every write at once; if any
// compare fails it falls back to one transaction per write, so that the others still
// land. Conflicts are rare in migration, so the common case is one round trip.
func (s *Store) writeGroup(ctx context.Context, guard *Guard, writes []Write, revs []int64, errs []error) {
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	var members []int
	for i, w := range writes {
		op, err := s.batchOp(ctx, w)
		if err != nil {
			errs[i] = err
			continue
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.abs(w.Key)), "=", w.Expected))
		ops = append(ops, op)
		members = append(members, i)
	}
	if len(ops) == 0 {
		return
	}
	rev, ok, err := s.commitBatch(ctx, guard, cmps, ops)
	for _, i := range members {
		if ok {
			revs[i] = rev
		} else {
			revs[i], errs[i] = s.writeOne(ctx, guard, writes[i], err)
		}
	}
}

// commitBatch commits the writes of one transaction of a batch; ok reports that every
// compare (and guard, if any) held. err is the transaction's own failure, if any.
func (s *Store) commitBatch(ctx context.Context, guard *Guard, cmps []clientv3.Cmp, ops []clientv3.Op) (rev int64, ok bool, err error) {
	if guard == nil {
		resp, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return 0, false, err
		}
		return resp.Header.Revision, resp.Succeeded, nil
	}
	rev, held, inner, err := s.guardedTxn(ctx, *guard, cmps, ops, nil)
	return rev, held && inner.Succeeded, err
}

// writeOne makes one write of a batch whose transaction failed (with batchErr, if the
// transaction itself failed) in a transaction of its own.
func (s *Store) writeOne(ctx context.Context, guard *Guard, w Write, batchErr error) (int64, error) {
	switch {
	case batchErr != nil && ctx.Err() != nil:
		return 0, translate(batchErr)
	case guard != nil:
		return s.guardedWrite(ctx, *guard, w)
	case w.Value == nil:
		return s.Delete(ctx, w.Key, w.Expected)
	}
	return s.Update(ctx, w.Key, w.Value, w.Expected)
}

// batchOp is the operation of one write of a batch, its value sealed.
func (s *Store) batchOp(ctx context.Context, w Write) (clientv3.Op, error) {
	k := s.abs(w.Key)
	if w.Value == nil {
		return clientv3.OpDelete(k), nil
	}
	v, err := s.seal(ctx, k, w.Value)
	if err != nil {
		return clientv3.Op{}, err
	}
	if err := checkSize(w.Key, v); err != nil {
		return clientv3.Op{}, err
	}
	// A rewrite keeps the key's lease: an expiring object still expires.
	return clientv3.OpPut(k, borrowed(v), clientv3.WithIgnoreLease()), nil
}
