package storage

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WriteOption tunes a Create or Update.
type WriteOption func(*writeOptions)

type writeOptions struct {
	ttl time.Duration
}

func collect(opts []WriteOption) writeOptions {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithTTL makes the written key expire: etcd deletes it (and watchers see the deletion)
// no sooner than ttl after the write and no later than ttl plus the lease-reuse window
// (ttl/20, at most a minute), the price of sharing one etcd lease among the writes of
// that window instead of granting one per write. It is how Events expire, as in
// Kubernetes. Zero or negative means no expiry.
func WithTTL(ttl time.Duration) WriteOption {
	return func(o *writeOptions) { o.ttl = ttl }
}

// leases hands out etcd leases for writes with a TTL, reusing one lease for all the
// writes of the same TTL within its reuse window.
type leases struct {
	client *clientv3.Client

	mu      sync.Mutex
	current map[time.Duration]grantedLease
}

type grantedLease struct {
	id      clientv3.LeaseID
	granted time.Time
}

// reuseWindow is how long a lease granted for ttl serves new writes.
func reuseWindow(ttl time.Duration) time.Duration { return min(time.Minute, ttl/20) }

// get returns a lease under which a key written now lives at least ttl.
func (l *leases) get(ctx context.Context, ttl time.Duration) (clientv3.LeaseID, error) {
	now := time.Now()
	reuse := reuseWindow(ttl)
	l.mu.Lock()
	if g, ok := l.current[ttl]; ok && now.Sub(g.granted) < reuse {
		l.mu.Unlock()
		return g.id, nil
	}
	l.mu.Unlock()
	seconds := int64(math.Ceil((ttl + reuse).Seconds()))
	resp, err := l.client.Grant(ctx, seconds)
	if err != nil {
		return 0, fmt.Errorf("granting a %ds lease: %w", seconds, translate(err))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current == nil {
		l.current = map[time.Duration]grantedLease{}
	}
	l.current[ttl] = grantedLease{id: resp.ID, granted: now}
	return resp.ID, nil
}

// putOp is the put of a Create or Update with opts.
func (s *Store) putOp(ctx context.Context, key string, value []byte, opts []WriteOption) (clientv3.Op, error) {
	value, err := s.seal(ctx, key, value)
	if err != nil {
		return clientv3.Op{}, err
	}
	if err := checkSize(s.rel([]byte(key)), value); err != nil {
		return clientv3.Op{}, err
	}
	o := collect(opts)
	if o.ttl <= 0 {
		return clientv3.OpPut(key, borrowed(value)), nil
	}
	id, err := s.leases.get(ctx, o.ttl)
	if err != nil {
		return clientv3.Op{}, err
	}
	return clientv3.OpPut(key, borrowed(value), clientv3.WithLease(id)), nil
}
