package storage

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EventType says what happened to a key.
type EventType int

const (
	// Put means the key was created (Prev == nil) or changed.
	Put EventType = iota
	// Deleted means the key was removed; Prev holds its last value.
	Deleted
	// Progress means nothing under the prefix changed, but the store has reached Revision.
	// Watchers use it for bookmarks.
	Progress
	// Error means the watch failed (Err is set, e.g. ErrCompacted) and the channel closes.
	Error
)

// Event is one change observed by Watch.
type Event struct {
	Type     EventType
	Revision int64
	// KV is the new value (Put) or the deleted key with an empty value (Deleted).
	KV *KeyValue
	// Prev is the value before the change: nil for a creation.
	Prev *KeyValue
	Err  error
	// BatchEnd marks the last event of what etcd sent together. etcd never splits the
	// changes of one revision (one transaction) across batches, so a reader that has
	// applied every event up to a BatchEnd holds whole transactions only.
	BatchEnd bool
}

// WatchOptions tune a Watch.
type WatchOptions struct {
	// ProgressInterval, if positive, asks etcd for a progress notification this often
	// so that idle watchers still learn the current revision (Progress events).
	ProgressInterval time.Duration
	// ProgressRequests, if set, asks etcd for a progress notification each time a value
	// is received: a reader waiting to have seen a revision learns without delay that
	// nothing under the prefix changed up to it. Requests made while one is pending
	// may be merged.
	ProgressRequests <-chan struct{}
	// WithoutPrevious leaves Prev unset on every event (etcd then sends less): for a
	// reader that keeps the previous values itself.
	WithoutPrevious bool
}

// Watch streams every change under prefix strictly after revision rev (0: from now on)
// until ctx is done; then the channel closes. A watch from a compacted revision yields
// one Error event matching ErrCompacted. Events arrive in revision order.
func (s *Store) Watch(ctx context.Context, prefix string, rev int64, opts WatchOptions) <-chan Event {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	out := make(chan Event, 100)
	wopts := []clientv3.OpOption{clientv3.WithPrefix()}
	if !opts.WithoutPrevious {
		wopts = append(wopts, clientv3.WithPrevKV())
	}
	if rev > 0 {
		// Start at rev itself, not rev+1, and drop what happened at rev below: etcd
		// withholds progress notifications from a watcher whose start revision the
		// store has not reached yet, so an idle watch started at the current revision
		// would never learn that time moves on.
		wopts = append(wopts, clientv3.WithRev(rev))
	}
	if opts.ProgressInterval > 0 {
		wopts = append(wopts, clientv3.WithProgressNotify())
	}
	// A watch context carrying a distinct value gets its own gRPC stream, so that
	// RequestProgress below concerns only this watcher.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	wch := s.client.Watch(wctx, s.abs(prefix), wopts...)
	go func() {
		defer close(out)
		defer cancel()
		var tick <-chan time.Time
		if opts.ProgressInterval > 0 {
			// A protocol timer, not a retry: etcd tells a watcher its revision only
			// when asked (RequestProgress).
			t := time.NewTicker(opts.ProgressInterval)
			defer t.Stop()
			tick = t.C
		}
		send := func(e Event) bool {
			select {
			case out <- e:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
				_ = s.client.RequestProgress(wctx)
			case <-opts.ProgressRequests:
				_ = s.client.RequestProgress(wctx)
			case resp, ok := <-wch:
				if !ok {
					if ctx.Err() == nil {
						send(Event{Type: Error, Err: fmt.Errorf("etcd watch closed")})
					}
					return
				}
				if err := resp.Err(); err != nil {
					if resp.CompactRevision != 0 {
						err = fmt.Errorf("%w: oldest available revision is %d", ErrCompacted, resp.CompactRevision)
					} else {
						err = translate(err)
					}
					send(Event{Type: Error, Err: err, Revision: resp.CompactRevision})
					return
				}
				if resp.IsProgressNotify() {
					if !send(Event{Type: Progress, Revision: resp.Header.Revision}) {
						return
					}
					continue
				}
				events, err := s.eventsAfter(wctx, resp, rev)
				for _, e := range events {
					if !send(e) {
						return
					}
				}
				if err != nil {
					send(Event{Type: Error, Err: err})
					return
				}
			}
		}
	}()
	return out
}

// eventsAfter returns the changes of one watch response newer than rev, the last one
// marked BatchEnd, or the error opening one of their values (then none: the watch
// ends with that error).
func (s *Store) eventsAfter(ctx context.Context, resp clientv3.WatchResponse, rev int64) ([]Event, error) {
	out := make([]Event, 0, len(resp.Events))
	for _, ev := range resp.Events {
		if ev.Kv.ModRevision <= rev {
			continue
		}
		kv, err := s.kv(ctx, ev.Kv)
		if err != nil {
			return nil, err
		}
		e := Event{Revision: ev.Kv.ModRevision, KV: kv}
		if ev.PrevKv != nil {
			if e.Prev, err = s.kv(ctx, ev.PrevKv); err != nil {
				return nil, err
			}
		}
		if ev.Type == clientv3.EventTypeDelete {
			e.Type = Deleted
		}
		out = append(out, e)
	}
	if len(out) > 0 {
		out[len(out)-1].BatchEnd = true
	}
	return out, nil
}
