package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
	// Uncounted reads a page of Limit keys without counting the keys after it
	// (Remaining is then -1). etcd answers a range with a limit by walking every key
	// after the page to count them, 90 ms a page at a million keys, so that paging
	// through a prefix costs it the square of the prefix's size; an uncounted page is
	// read through etcd's range stream (etcd 3.7), cut once the page and the key after
	// it have arrived, in time proportional to the page. An etcd without range streams
	// answers it, and every uncounted page after it, as a counted page.
	Uncounted bool
}

// ListResult is one page of a List.
type ListResult struct {
	Items []*KeyValue
	// Revision the page was read at: the resourceVersion of the list.
	Revision int64
	// More is true when keys remain after the last item.
	More bool
	// Remaining counts the keys after this page when More is true (-1: not counted).
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
	if opts.Uncounted && opts.Limit > 0 && !s.noRangeStream.Load() {
		out, err := s.listUncounted(ctx, start, end, opts)
		if !errors.Is(err, errNoRangeStream) {
			return out, err
		}
		s.noRangeStream.Store(true)
	}
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

// errNoRangeStream means that etcd does not serve range streams (before 3.7).
var errNoRangeStream = errors.New("etcd serves no range streams")

// listUncounted reads the page of opts from start (absolute) through etcd's range
// stream at one revision (opts.Revision, else the current one), and cuts the stream
// once it has the page and one key more: etcd reads chunks that double from ten keys,
// so it reads at most about twice the page, and never counts the rest.
func (s *Store) listUncounted(ctx context.Context, start, end string, opts ListOptions) (*ListResult, error) {
	rev := opts.Revision
	if rev == 0 {
		var err error
		if rev, err = s.CurrentRevision(ctx); err != nil {
			return nil, err
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	chunks, err := s.client.GetStream(sctx, start, clientv3.WithRange(end), clientv3.WithRev(rev))
	if err != nil {
		cancel()
		return nil, streamError(err)
	}
	defer func() {
		cancel()
		for range chunks { // the stream's goroutine ends once it has said so
		}
	}()
	out := &ListResult{Revision: rev, Remaining: -1}
	for chunk := range chunks {
		if err := chunk.Err(); err != nil {
			return nil, streamError(err)
		}
		for _, k := range chunk.Kvs {
			if int64(len(out.Items)) == opts.Limit {
				out.More = true
				return out, nil
			}
			item, err := s.kv(ctx, k)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, item)
		}
	}
	out.Remaining = 0
	return out, nil
}

// streamError translates a range stream's error; an etcd that does not implement
// range streams answers errNoRangeStream.
func streamError(err error) error {
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("%w: %w", errNoRangeStream, err)
	}
	return translate(err)
}
