package reconcile

import (
	"context"
	"sync"
)

// Elector runs a controller's terms of leadership: lead runs while the process leads
// an election, with a context that ends when leadership is lost or ctx is done, and
// RunElected returns once ctx is done and lead has returned. An Election elects for
// one controller alone; a Campaign for every controller that joins it.
type Elector interface {
	RunElected(ctx context.Context, lead func(ctx context.Context)) error
}

// RunElected is the package's RunElected over e: e is the election of this one
// controller.
func (e Election) RunElected(ctx context.Context, lead func(ctx context.Context)) error {
	return RunElected(ctx, e, lead)
}

// Campaign is one election that several controllers of a process share, as
// kube-controller-manager's controllers share its one Lease: while the process leads,
// every controller that has joined (by its RunElected) leads, and none leads when it
// does not. One Lease renewed for all of them, where an election each renewed a
// Lease each.
//
// Run campaigns, and is the component to start before the controllers that join and
// to stop after them. A controller may join and leave at any time: one that joins
// during a term leads at once. A term ends, and the campaign stands again, only once
// every controller's lead of it has returned, so that no controller of this process
// works while another process may lead.
type Campaign struct {
	election Election

	mu      sync.Mutex
	members map[*member]struct{}
	term    context.Context // of the current term; nil while not leading
	leads   sync.WaitGroup  // the leads of the current term
}

// member is a controller that has joined a Campaign.
type member struct {
	ctx     context.Context // the controller's own: its values, and its end
	lead    func(ctx context.Context)
	running sync.WaitGroup // its lead of the current term
}

// NewCampaign returns the campaign that elects over e.
func NewCampaign(e Election) *Campaign {
	return &Campaign{election: e, members: map[*member]struct{}{}}
}

// Run campaigns until ctx is done, and then gives up leadership (after the
// controllers' leads have returned).
func (c *Campaign) Run(ctx context.Context) error { return RunElected(ctx, c.election, c.lead) }

// lead is one term of leadership: every member leads until it ends.
func (c *Campaign) lead(term context.Context) {
	c.mu.Lock()
	c.term = term
	for m := range c.members {
		c.start(m)
	}
	c.mu.Unlock()
	<-term.Done()
	c.mu.Lock()
	c.term = nil
	c.mu.Unlock()
	c.leads.Wait()
}

// start runs m's lead for the current term, with m's context's values, until the
// term or m's context ends. c.mu is held, and c.term set.
func (c *Campaign) start(m *member) {
	ctx, cancel := context.WithCancel(m.ctx)
	stop := context.AfterFunc(c.term, cancel)
	c.leads.Add(1)
	m.running.Add(1)
	go func() {
		defer c.leads.Done()
		defer m.running.Done()
		defer cancel()
		defer stop()
		m.lead(ctx)
	}()
}

// RunElected joins the campaign: lead runs in every term of the campaign's
// leadership, until ctx is done; it returns once lead has returned.
func (c *Campaign) RunElected(ctx context.Context, lead func(ctx context.Context)) error {
	m := &member{ctx: ctx, lead: lead}
	c.mu.Lock()
	c.members[m] = struct{}{}
	if c.term != nil {
		c.start(m)
	}
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	delete(c.members, m)
	c.mu.Unlock()
	m.running.Wait()
	return nil
}
