package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// CompactionKey is the etcd key (outside any prefix: etcd's history is one for all
// who share it) whose version the servers sharing an etcd advance to take turns at
// compacting it, as kube-apiservers do with the same key.
const CompactionKey = "compact_rev_key"

// Compaction is what a server knows of the compaction turns: the version of
// CompactionKey it last saw and etcd's revision then. The zero value is a server that
// has seen none.
type Compaction struct {
	KeyVersion int64
	Revision   int64
}

// CompactStep takes one turn at compacting etcd's history, one interval after the turn
// that last returned last: if no server advanced CompactionKey since last, this one
// advances it and compacts the history before last.Revision (nothing at the first
// turn of a server, whose last is zero); if another did, that server compacts, and
// this one only learns the key's version. compacted is the revision compacted to, or
// 0. The Compaction returned is the next call's last.
func (s *Store) CompactStep(ctx context.Context, last Compaction) (next Compaction, compacted int64, err error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(CompactionKey), "=", last.KeyVersion)).
		Then(clientv3.OpPut(CompactionKey, strconv.FormatInt(last.Revision, 10))).
		Else(clientv3.OpGet(CompactionKey)).
		Commit()
	if err != nil {
		return last, 0, translate(err)
	}
	next.Revision = resp.Header.Revision
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) > 0 {
			next.KeyVersion = kvs[0].Version
		}
		return next, 0, nil
	}
	next.KeyVersion = last.KeyVersion + 1
	if last.Revision == 0 {
		return next, 0, nil
	}
	if _, err := s.client.Compact(ctx, last.Revision); err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return next, 0, nil // compacted that far already (by an operator, say)
		}
		return next, 0, fmt.Errorf("compacting etcd at revision %d: %w", last.Revision, translate(err))
	}
	return next, last.Revision, nil
}
