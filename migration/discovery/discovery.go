package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientdiscovery "k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
)

// Info is what discovery says about one resource.
type Info struct {
	// GVR names the resource in the version the server prefers.
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// Hash is the storageVersionHash ("" for Resources that are not persisted, or
	// whose server does not publish it).
	Hash string
	// Migratable is true if the resource can be listed and updated.
	Migratable bool
}

// Resources caches the server's discovery, refreshed by the trigger's polls and on
// demand when a resource is not found.
type Resources struct {
	disc clientdiscovery.DiscoveryInterface

	mu        sync.Mutex
	byGR      map[schema.GroupResource]Info
	refreshed time.Time
}

// New returns an empty cache of what disc serves; Refresh fills it.
func New(disc clientdiscovery.DiscoveryInterface) *Resources {
	return &Resources{disc: disc, byGR: map[schema.GroupResource]Info{}}
}

// Refresh reads discovery again. Groups that fail to answer (an aggregated server
// that is down) keep what was known of them; the error names them.
func (r *Resources) Refresh(ctx context.Context) error {
	lists, err := clientdiscovery.ServerPreferredResources(r.disc)
	if lists == nil && err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	found := map[schema.GroupResource]Info{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, ar := range l.APIResources {
			if strings.Contains(ar.Name, "/") {
				continue // a subresource
			}
			gr := schema.GroupResource{Group: gv.Group, Resource: ar.Name}
			found[gr] = Info{
				GVR:        gv.WithResource(ar.Name),
				Kind:       ar.Kind,
				Namespaced: ar.Namespaced,
				Hash:       ar.StorageVersionHash,
				Migratable: slices.Contains(ar.Verbs, "list") && slices.Contains(ar.Verbs, "update"),
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		// Keep the Resources of the groups that failed.
		var failed *clientdiscovery.ErrGroupDiscoveryFailed
		if discoveryFailed(err, &failed) {
			for gr, info := range r.byGR {
				if _, bad := failed.Groups[info.GVR.GroupVersion()]; bad {
					found[gr] = info
				}
			}
		}
		klog.FromContext(ctx).V(2).Info("Discovery incomplete", "err", err)
	}
	r.byGR = found
	r.refreshed = time.Now()
	return nil
}

func discoveryFailed(err error, target **clientdiscovery.ErrGroupDiscoveryFailed) bool {
	return errors.As(err, target)
}

// Synced reports whether discovery has answered at least once.
func (r *Resources) Synced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.refreshed.IsZero()
}

// Get returns the cached information about gr.
func (r *Resources) Get(gr schema.GroupResource) (Info, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	info, ok := r.byGR[gr]
	return info, ok
}

// All returns every cached resource.
func (r *Resources) All() []schema.GroupResource {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]schema.GroupResource, 0, len(r.byGR))
	for gr := range r.byGR {
		out = append(out, gr)
	}
	return out
}

// Lookup returns the information about gr, reading discovery again if gr is not
// known or the cache is older than maxAge.
func (r *Resources) Lookup(ctx context.Context, gr schema.GroupResource, maxAge time.Duration) (Info, bool, error) {
	r.mu.Lock()
	info, ok := r.byGR[gr]
	fresh := time.Since(r.refreshed) < maxAge
	r.mu.Unlock()
	if ok && fresh {
		return info, true, nil
	}
	if err := r.Refresh(ctx); err != nil {
		return info, ok, err
	}
	info, ok = r.Get(gr)
	return info, ok, nil
}

// Served reports whether the server serves gvr (from the cache).
func (r *Resources) Served(gvr schema.GroupVersionResource) bool {
	info, ok := r.Get(gvr.GroupResource())
	return ok && info.GVR.Version == gvr.Version
}
