package reconcile

import (
	"context"
	"errors"
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

// ErrCampaignEnded is returned by a Campaign's RunElected once its Run has returned:
// the controller would never lead.
var ErrCampaignEnded = errors.New("the election's campaign has ended")

// Campaign is one election that several controllers of a process share, as
// kube-controller-manager's controllers share its one Lease: while the process leads,
// every controller that has joined (by its RunElected) leads, and none leads when it
// does not. One Lease renewed for all of them, where an election each renewed a
// Lease each.
//
// Run campaigns, and is the component to start before the controllers that join and
// to stop after them. A controller may join and leave at any time: one that joins
// during a term leads at once. A term ends, and the campaign stands again, only once
// every controller's lead of it has returned; when Run's context ends, the leads end
// and have returned before leadership is given up, so that no controller of this
// process works while another process may lead.
type Campaign struct {
	election Election

	mu      sync.Mutex
	members map[*member]struct{}
	term    context.Context // of the current term; nil while not leading
	ending  bool            // Run's context has ended: no lead starts any more
	ended   bool            // Run has returned
	leads   sync.WaitGroup  // the leads of the current term
}

// member is a controller that has joined a Campaign.
type member struct {
	ctx     context.Context // the controller's own: its values, and its end
	lead    func(ctx context.Context)
	running sync.WaitGroup // its lead of the current term
	cancel  context.CancelFunc
}

// NewCampaign returns the campaign that elects over e.
func NewCampaign(e Election) *Campaign {
	return &Campaign{election: e, members: map[*member]struct{}{}}
}

// Run campaigns until ctx is done. Then it ends the current term's leads, waits for
// them, and only then gives leadership up.
func (c *Campaign) Run(ctx context.Context) error {
	electing, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.ending = true
		for m := range c.members {
			if m.cancel != nil {
				m.cancel()
			}
		}
		c.mu.Unlock()
		c.leads.Wait()
		stopElecting()
	})
	defer stop()
	err := RunElected(electing, c.election, c.lead)
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	return err
}

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
// term or m's context ends; nothing once the term or Run's context has ended. c.mu
// is held.
func (c *Campaign) start(m *member) {
	if c.term == nil || c.term.Err() != nil || c.ending {
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	stop := context.AfterFunc(c.term, cancel)
	m.cancel = cancel
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
// leadership, until ctx is done; it returns once lead has returned. It returns
// ErrCampaignEnded at once if the campaign's Run has returned.
func (c *Campaign) RunElected(ctx context.Context, lead func(ctx context.Context)) error {
	m := &member{ctx: ctx, lead: lead}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return ErrCampaignEnded
	}
	c.members[m] = struct{}{}
	c.start(m)
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	delete(c.members, m)
	c.mu.Unlock()
	m.running.Wait()
	return nil
}
