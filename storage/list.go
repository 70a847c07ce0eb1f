package storage

import (
	"context"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ListOptions selects one page of a key range.
type ListOptions struct {
	// Revision to read at; 0 reads the current revision (linearizable).
	Revision int64
	// Limit is the most keys to return; 0 means all.
	Limit int64
	// Start is the first key to return, relative to the store (it must lie under the
	// listed prefix); empty starts at the prefix. Continue tokens carry it.
	Start string
}

// ListResult is one page of a List.
type ListResult struct {
	Items []*KeyValue
	// Revision the page was read at: the resourceVersion of the list.
	Revision int64
	// More is true when keys remain after the last item.
	More bool
	// Remaining counts the keys after this page when More is true.
	Remaining int64
}

// List reads the keys under prefix (relative to the store; a trailing "/" is added if
// missing) in key order, one page at a time. It returns ErrCompacted if
// opts.Revision was compacted and ErrFutureRevision if it is newer than the store.
func (s *Store) List(ctx context.Context, prefix string, opts ListOptions) (*ListResult, error) {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	absPrefix := s.abs(prefix)
	start := absPrefix
	if opts.Start != "" {
		start = s.abs(opts.Start)
	}
	end := clientv3.GetPrefixRangeEnd(absPrefix)
	getOpts := []clientv3.OpOption{clientv3.WithRange(end)}
	if opts.Revision > 0 {
		getOpts = append(getOpts, clientv3.WithRev(opts.Revision))
	}
	if opts.Limit > 0 {
		getOpts = append(getOpts, clientv3.WithLimit(opts.Limit))
	}
	defer s.observe("list", prefix, time.Now())
	resp, err := s.client.Get(ctx, start, getOpts...)
	if err != nil {
		return nil, translate(err)
	}
	out := &ListResult{Items: make([]*KeyValue, len(resp.Kvs)), Revision: resp.Header.Revision, More: resp.More}
	if opts.Revision > 0 {
		out.Revision = opts.Revision
	}
	for i, k := range resp.Kvs {
		if out.Items[i], err = s.kv(ctx, k); err != nil {
			return nil, err
		}
	}
	if resp.More {
		out.Remaining = resp.Count - int64(len(resp.Kvs))
	}
	return out, nil
}

// Count returns the number of keys under prefix at the current revision.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	abs := s.abs(prefix)
	resp, err := s.client.Get(ctx, abs, clientv3.WithRange(clientv3.GetPrefixRangeEnd(abs)), clientv3.WithCountOnly())
	if err != nil {
		return 0, translate(err)
	}
	return resp.Count, nil
}

// PrefixEnd is the end of the range of keys that start with prefix (etcd's range end
// for a prefix): "\x00" when every key after prefix has it.
func PrefixEnd(prefix string) string { return clientv3.GetPrefixRangeEnd(prefix) }
