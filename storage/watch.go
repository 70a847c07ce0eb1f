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
}

// WatchOptions tune a Watch.
type WatchOptions struct {
	// ProgressInterval, if positive, asks etcd for a progress notification this often
	// so that idle watchers still learn the current revision (Progress events).
	ProgressInterval time.Duration
}

// Watch streams every change under prefix strictly after revision rev (0: from now on)
// until ctx is done; then the channel closes. A watch from a compacted revision yields
// one Error event matching ErrCompacted. Events arrive in revision order.
func (s *Store) Watch(ctx context.Context, prefix string, rev int64, opts WatchOptions) <-chan Event {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	out := make(chan Event, 100)
	wopts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV()}
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
				for _, ev := range resp.Events {
					if ev.Kv.ModRevision <= rev {
						continue
					}
					e := Event{Revision: ev.Kv.ModRevision, KV: s.kv(ev.Kv)}
					if ev.PrevKv != nil {
						e.Prev = s.kv(ev.PrevKv)
					}
					if ev.Type == clientv3.EventTypeDelete {
						e.Type = Deleted
					}
					if !send(e) {
						return
					}
				}
			}
		}
	}()
	return out
}
