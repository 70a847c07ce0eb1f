package storage

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/concordproject/concord/retry"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
	// BatchEnd marks the last event of what the watch hands on together: what etcd
	// sent in one response, or of a response etcd sent in fragments, the revisions it
	// has completed. A revision (one transaction) is never split across batches, so a
	// reader that has applied every event up to a BatchEnd holds whole transactions
	// only.
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
//
// The watch reads etcd only as fast as its reader takes the events (see watchStream):
// a reader slower than etcd's writes leaves them in etcd, not in this process. A
// stream that breaks (etcd restarted, its leader lost, the connection cut) is opened
// again where it stood, and the reader sees nothing of it. While etcd cannot be
// reached, the watch waits for the connection to come back; a stream etcd breaks
// again before it has delivered anything new is opened again under the resumeWatch
// policy's backoff, and the watch ends with an Error event once that is spent.
func (s *Store) Watch(ctx context.Context, prefix string, rev int64, opts WatchOptions) <-chan Event {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	out := make(chan Event, 100)
	w := &watch{s: s, key: s.abs(prefix), opts: opts, out: out, last: rev}
	go w.run(ctx)
	return out
}

// A watch is the state of one Watch: where it stands, so that a new stream resumes
// there.
type watch struct {
	s    *Store
	key  string
	opts WatchOptions
	out  chan<- Event
	// last is the newest revision the reader has been told of (an event's, a
	// progress notification's, or the start's): a stream opens at it and drops it.
	// etcd withholds progress notifications from a watcher whose start revision the
	// store has not reached yet, so a watch opened at rev+1 on an idle store would
	// never learn that time moves on.
	last int64
	// carry is the last revision's changes of a fragment etcd has not finished yet:
	// the next fragment may continue it, and the reader gets a revision whole.
	carry []*mvccpb.Event
}

func (w *watch) run(ctx context.Context) {
	defer close(w.out)
	var tick <-chan time.Time
	if w.opts.ProgressInterval > 0 {
		// A protocol timer, not a retry: etcd tells a watcher its revision only
		// when asked (a progress request).
		t := time.NewTicker(w.opts.ProgressInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		err := retry.Do(ctx, resumeWatch, func(ctx context.Context) error { return w.stream(ctx, tick) })
		if errors.Is(err, errProgressed) && ctx.Err() == nil {
			continue // a stream that delivered something broke: its successor starts afresh
		}
		if ctx.Err() != nil {
			return
		}
		end := Event{Type: Error, Err: err}
		var compacted *compactedError
		if errors.As(err, &compacted) {
			end.Revision = compacted.oldest
		}
		w.send(ctx, end)
		return
	}
}

// errProgressed ends an attempt whose stream delivered something before it broke:
// opening the next is not a retry of the same failure.
var errProgressed = errors.New("the stream delivered changes before it broke")

// stream opens one stream at w.last and follows it until it ends: errProgressed if it
// broke after the watch moved on, a brokenStreamError if it broke before (worth
// another attempt after the policy's wait), else why the watch ends.
func (w *watch) stream(ctx context.Context, tick <-chan time.Time) error {
	w.carry = nil // a new stream sends the carried revision again, whole
	from := w.last
	ws, first, err := w.dial(ctx)
	if err != nil {
		return err
	}
	defer ws.close()
	err = w.follow(ctx, ws, first, tick)
	var broken *brokenStreamError
	if errors.As(err, &broken) && w.last != from {
		return errProgressed
	}
	return err
}

// follow hands on what one stream delivers, first first, until it breaks, etcd ends
// the watch, or ctx is done.
func (w *watch) follow(ctx context.Context, ws *watchStream, first *pb.WatchResponse, tick <-chan time.Time) error {
	if err := w.handle(ctx, first); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			ws.requestProgress()
		case <-w.opts.ProgressRequests:
			ws.requestProgress()
		case r := <-ws.recv:
			if r.err != nil {
				return watchStreamError(r.err)
			}
			if err := w.handle(ctx, r.resp); err != nil {
				return err
			}
		}
	}
}

// handle hands on one response of etcd's: its changes after w.last, or the progress
// it reports; an error if etcd ended the watch or ctx is done.
func (w *watch) handle(ctx context.Context, resp *pb.WatchResponse) error {
	switch {
	case resp.CompactRevision != 0:
		return &compactedError{oldest: resp.CompactRevision}
	case resp.Canceled:
		if resp.CancelReason != "" {
			return translate(rpctypes.Error(status.Error(codes.FailedPrecondition, resp.CancelReason)))
		}
		return translate(rpctypes.ErrFutureRev)
	case resp.Created:
		if w.last == 0 && resp.Header != nil {
			w.last = resp.Header.Revision // from now on: nothing at or before it is ours
		}
		return nil
	case len(resp.Events) == 0:
		if resp.Header == nil || resp.Header.Revision == 0 || len(w.carry) > 0 {
			return nil
		}
		if !w.send(ctx, Event{Type: Progress, Revision: resp.Header.Revision}) {
			return ctx.Err()
		}
		w.last = max(w.last, resp.Header.Revision)
		return nil
	}
	events, err := w.s.eventsAfter(ctx, w.whole(resp), w.last)
	if err != nil {
		return err
	}
	for _, e := range events {
		if !w.send(ctx, e) {
			return ctx.Err()
		}
		w.last = e.Revision
	}
	return nil
}

// whole returns the changes of resp, with those carried from the fragment before,
// less the last revision's if etcd has more fragments of the response to send:
// those are carried to the next.
func (w *watch) whole(resp *pb.WatchResponse) []*mvccpb.Event {
	changes := resp.Events
	if len(w.carry) > 0 {
		changes = append(w.carry, changes...)
		w.carry = nil
	}
	if !resp.Fragment || len(changes) == 0 {
		return changes
	}
	last := changes[len(changes)-1].Kv.ModRevision
	cut := len(changes)
	for cut > 0 && changes[cut-1].Kv.ModRevision == last {
		cut--
	}
	w.carry = changes[cut:]
	return changes[:cut]
}

func (w *watch) send(ctx context.Context, e Event) bool {
	select {
	case w.out <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// eventsAfter returns the changes of one watch response newer than rev, the last one
// marked BatchEnd, or the error opening one of their values (then none: the watch
// ends with that error).
func (s *Store) eventsAfter(ctx context.Context, changes []*mvccpb.Event, rev int64) ([]Event, error) {
	out := make([]Event, 0, len(changes))
	for _, ev := range changes {
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
		if ev.Type == mvccpb.DELETE {
			e.Type = Deleted
		}
		out = append(out, e)
	}
	if len(out) > 0 {
		out[len(out)-1].BatchEnd = true
	}
	return out, nil
}
