package store

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// A Pacer holds an in-process informer's watch while the informer's handlers have not
// yet taken Limit of the changes it delivered. client-go's informer moves every
// change its watch delivers into a queue without bound, so a watch whose handlers are
// slower than etcd's writes (a million creations written at etcd's pace) would
// otherwise hold its backlog in that queue, and the private watch behind it, never
// full, would go on reading etcd. Held, the watch fills, and its private cache stops
// reading etcd until there is room (registry/watchcache's pacing).
//
// The handlers call Handled once for each change they take; changes of an informer's
// lists are not counted, and a Handled too many only loosens the pace.
type Pacer struct {
	limit int64

	mu                 sync.Mutex
	delivered, handled int64
	room               chan struct{} // a token once handled moves
}

// NewPacer returns a Pacer that lets a watch run limit changes ahead of its handlers.
func NewPacer(limit int64) *Pacer {
	return &Pacer{limit: limit, room: make(chan struct{}, 1)}
}

// Handled records that the informer's handlers have taken one change.
func (p *Pacer) Handled() {
	p.mu.Lock()
	p.handled = min(p.handled+1, p.delivered)
	p.mu.Unlock()
	select {
	case p.room <- struct{}{}:
	default:
	}
}

// restart forgets the changes of the watches before: the informer watches again, and
// what they delivered and its handlers have not taken yet no longer holds the new one
// (at worst the backlog is twice the limit for a while).
func (p *Pacer) restart() {
	p.mu.Lock()
	p.delivered = p.handled
	p.mu.Unlock()
}

// deliver waits until the watch may deliver one more change; false once ctx is done.
func (p *Pacer) deliver(ctx context.Context) bool {
	for {
		p.mu.Lock()
		if p.delivered-p.handled < p.limit {
			p.delivered++
			p.mu.Unlock()
			return true
		}
		p.mu.Unlock()
		select {
		case <-p.room:
		case <-ctx.Done():
			return false
		}
	}
}

// paced is w, each change of an object held until p has room for it.
func (p *Pacer) paced(ctx context.Context, w watch.Interface) watch.Interface {
	p.restart()
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		switch e.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			if !p.deliver(ctx) {
				return e, false
			}
		}
		return e, true
	})
}
