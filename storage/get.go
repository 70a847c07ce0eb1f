package storage

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

type mvccKV = mvccpb.KeyValue

// Get returns the current value of key (a linearizable read), or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (*KeyValue, error) {
	return s.GetAt(ctx, key, 0)
}

// GetAt returns the value key had at revision rev (0 means the current one). It returns
// ErrNotFound if the key did not exist then, ErrCompacted if rev was compacted and
// ErrFutureRevision if rev is newer than the store.
func (s *Store) GetAt(ctx context.Context, key string, rev int64) (*KeyValue, error) {
	opts := []clientv3.OpOption{}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	defer s.observe("get", key, time.Now())
	resp, err := s.client.Get(ctx, s.abs(key), opts...)
	if err != nil {
		return nil, translate(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return s.kv(ctx, resp.Kvs[0])
}
