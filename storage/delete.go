package storage

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Delete removes key if and only if it is still at revision expected, in one
// transaction, and returns the revision of the deletion. If the key moved or vanished it
// returns a *ConflictError as Update does.
func (s *Store) Delete(ctx context.Context, key string, expected int64) (int64, error) {
	k := s.abs(key)
	defer s.observe("delete", key, time.Now())
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", expected)).
		Then(clientv3.OpDelete(k)).
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
