package storage

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Create writes value at key if and only if key does not exist, in one transaction. It
// returns the new revision, or ErrAlreadyExists.
func (s *Store) Create(ctx context.Context, key string, value []byte, opts ...WriteOption) (int64, error) {
	k := s.abs(key)
	defer s.observe("create", key, time.Now())
	put, err := s.putOp(ctx, k, value, opts)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", 0)).
		Then(put).
		Commit()
	if err != nil {
		return 0, translate(err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%s: %w", key, ErrAlreadyExists)
	}
	return resp.Header.Revision, nil
}
