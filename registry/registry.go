package registry

import (
	"context"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Registry is the set of resources a server currently knows. It is safe for
// concurrent use; readers see whole Resources, never half-updated ones.
type Registry struct {
	mu        sync.RWMutex
	resources map[schema.GroupResource]*Resource
	gen       uint64
	subs      map[chan struct{}]struct{}
}

// New returns an empty Registry.
func New() *Registry {
	return &Registry{resources: map[schema.GroupResource]*Resource{}, subs: map[chan struct{}]struct{}{}}
}

// Put adds res, or replaces the resource with the same group and plural. It returns
// an error, and changes nothing, if res is not valid or a schema does not compile.
// res is prepared (see Resource.Prepare) and must not be changed afterwards.
func (r *Registry) Put(ctx context.Context, res *Resource) error {
	if err := res.Prepare(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	r.resources[res.GroupResource()] = res
	r.changedLocked()
	r.mu.Unlock()
	return nil
}

// Delete removes the resource gr, if present.
func (r *Registry) Delete(gr schema.GroupResource) {
	r.mu.Lock()
	if _, ok := r.resources[gr]; ok {
		delete(r.resources, gr)
		r.changedLocked()
	}
	r.mu.Unlock()
}

func (r *Registry) changedLocked() {
	r.gen++
	for c := range r.subs {
		select {
		case c <- struct{}{}:
		default: // a notification is already pending: changes coalesce
		}
	}
}

// Get returns the resource gr, or nil.
func (r *Registry) Get(gr schema.GroupResource) *Resource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.resources[gr]
}

// Served returns the resource gr if it serves version, or nil.
func (r *Registry) Served(gr schema.GroupResource, version string) *Resource {
	if res := r.Get(gr); res != nil && res.ServedVersion(version) != nil {
		return res
	}
	return nil
}

// Lookup finds the resource served at group/version/resource, accepting the plural
// only. It returns the resource and the served version, or nils.
func (r *Registry) Lookup(gvr schema.GroupVersionResource) (*Resource, *Version) {
	res := r.Get(gvr.GroupResource())
	if res == nil {
		return nil, nil
	}
	v := res.ServedVersion(gvr.Version)
	if v == nil {
		return nil, nil
	}
	return res, v
}

// Resources returns every resource, sorted by group then plural.
func (r *Registry) Resources() []*Resource {
	r.mu.RLock()
	out := make([]*Resource, 0, len(r.resources))
	for _, res := range r.resources {
		out = append(out, res)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Resource) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return strings.Compare(a.Names.Plural, b.Names.Plural)
	})
	return out
}

// Generation increases by one on every change; caches built from the registry keep
// the generation they were built at.
func (r *Registry) Generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// OnChange subscribes to changes and, on a goroutine of its own, calls fn after each
// (several changes may coalesce into one call) until ctx is done. It returns a
// function that waits for that goroutine to return: defer reg.OnChange(ctx, fn)()
// in a Run joins it.
func (r *Registry) OnChange(ctx context.Context, fn func()) (wait func()) {
	changes, unsubscribe := r.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer unsubscribe()
		for {
			select {
			case <-ctx.Done():
				return
			case <-changes:
				fn()
			}
		}
	}()
	return func() { <-done }
}

// Subscribe returns a channel that receives a value after changes (several changes
// may coalesce into one value), and a function that ends the subscription.
func (r *Registry) Subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	r.mu.Lock()
	r.subs[c] = struct{}{}
	r.mu.Unlock()
	return c, func() {
		r.mu.Lock()
		delete(r.subs, c)
		r.mu.Unlock()
	}
}
