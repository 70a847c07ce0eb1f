package storageversion

import (
	"context"
	"sync"
)

// gate admits the writes of one resource. Closed, it refuses them and says why; open,
// it counts those in flight, so that whoever closes it can wait until the writes it
// admitted are over (a storage version must not change under a write that encodes in
// the old one).
type gate struct {
	mu     sync.Mutex
	open   bool
	reason error         // why the gate is closed: the last error seen (nil: none yet)
	opened chan struct{} // closed when the gate opens
	// inflight counts the admitted writes not yet over; idle is closed when it drops
	// to zero while someone waits (nil when nobody does).
	inflight int
	idle     chan struct{}
}

// newGate returns a closed gate.
func newGate() *gate { return &gate{opened: make(chan struct{})} }

// enter admits one write if the gate is open; the caller must call leave once the write
// is over. Otherwise it returns a channel closed when the gate opens, and why it is
// closed.
func (g *gate) enter() (ok bool, opened <-chan struct{}, reason error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		return false, g.opened, g.reason
	}
	g.inflight++
	return true, nil, nil
}

// leave ends a write enter admitted.
func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.inflight == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// setOpen opens the gate and wakes the writes waiting for it.
func (g *gate) setOpen() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return
	}
	g.open, g.reason = true, nil
	close(g.opened)
}

// isOpen reports whether the gate admits writes.
func (g *gate) isOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// state reports whether the gate is open and, closed, why.
func (g *gate) state() (open bool, reason error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open, g.reason
}

// close refuses new writes with reason; writes already admitted go on.
func (g *gate) close(reason error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		g.open = false
		g.opened = make(chan struct{})
	}
	g.reason = reason
}

// fail records why a closed gate stays closed; an open gate is left alone.
func (g *gate) fail(reason error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		g.reason = reason
	}
}

// drain waits until every admitted write is over, or ctx is done.
func (g *gate) drain(ctx context.Context) error {
	g.mu.Lock()
	if g.inflight == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
