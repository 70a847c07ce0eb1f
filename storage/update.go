package storage

import (
	"context"
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
		return 0, s.conflict(key, resp)
	}
	return resp.Header.Revision, nil
}

func (s *Store) conflict(key string, resp *clientv3.TxnResponse) error {
	ce := &ConflictError{Key: key}
	if len(resp.Responses) > 0 {
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			ce.Current = s.kv(kvs[0])
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
	revs := make([]int64, len(writes))
	errs := make([]error, len(writes))
	// A transaction whose compares all hold applies every write at once; if any compare
	// fails we fall back to one transaction per write of that group so that the others
	// still land. Conflicts are rare in migration, so the common case is one round trip.
	const maxOps = 128 // etcd's default --max-txn-ops
	for start := 0; start < len(writes); start += maxOps {
		end := min(start+maxOps, len(writes))
		group := writes[start:end]
		cmps := make([]clientv3.Cmp, len(group))
		ops := make([]clientv3.Op, len(group))
		for i, w := range group {
			k := s.abs(w.Key)
			cmps[i] = clientv3.Compare(clientv3.ModRevision(k), "=", w.Expected)
			if w.Value == nil {
				ops[i] = clientv3.OpDelete(k)
			} else {
				// A rewrite keeps the key's lease: an expiring object still expires.
				ops[i] = clientv3.OpPut(k, string(w.Value), clientv3.WithIgnoreLease())
			}
		}
		resp, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err == nil && resp.Succeeded {
			for i := range group {
				revs[start+i] = resp.Header.Revision
			}
			continue
		}
		for i, w := range group {
			if err != nil && ctx.Err() != nil {
				errs[start+i] = translate(err)
				continue
			}
			if w.Value == nil {
				revs[start+i], errs[start+i] = s.Delete(ctx, w.Key, w.Expected)
			} else {
				revs[start+i], errs[start+i] = s.Update(ctx, w.Key, w.Value, w.Expected)
			}
		}
	}
	return revs, errs
}
