package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
)

// resourceInfo is what discovery says about one resource.
type resourceInfo struct {
	// GVR names the resource in the version the server prefers.
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// Hash is the storageVersionHash ("" for resources that are not persisted, or
	// whose server does not publish it).
	Hash string
	// Migratable is true if the resource can be listed and updated.
	Migratable bool
}

// resources caches the server's discovery, refreshed by the trigger's polls and on
// demand when a resource is not found.
type resources struct {
	disc discovery.DiscoveryInterface

	mu        sync.Mutex
	byGR      map[schema.GroupResource]resourceInfo
	refreshed time.Time
}

func newResources(disc discovery.DiscoveryInterface) *resources {
	return &resources{disc: disc, byGR: map[schema.GroupResource]resourceInfo{}}
}

// refresh reads discovery again. Groups that fail to answer (an aggregated server
// that is down) keep what was known of them; the error names them.
func (r *resources) refresh(ctx context.Context) error {
	lists, err := discovery.ServerPreferredResources(r.disc)
	if lists == nil && err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	found := map[schema.GroupResource]resourceInfo{}
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
			found[gr] = resourceInfo{
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
		// Keep the resources of the groups that failed.
		var failed *discovery.ErrGroupDiscoveryFailed
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

func discoveryFailed(err error, target **discovery.ErrGroupDiscoveryFailed) bool {
	return errors.As(err, target)
}

// synced reports whether discovery has answered at least once.
func (r *resources) synced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.refreshed.IsZero()
}

// get returns the cached information about gr.
func (r *resources) get(gr schema.GroupResource) (resourceInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	info, ok := r.byGR[gr]
	return info, ok
}

// all returns every cached resource.
func (r *resources) all() []schema.GroupResource {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]schema.GroupResource, 0, len(r.byGR))
	for gr := range r.byGR {
		out = append(out, gr)
	}
	return out
}

// lookup returns the information about gr, reading discovery again if gr is not
// known or the cache is older than maxAge.
func (r *resources) lookup(ctx context.Context, gr schema.GroupResource, maxAge time.Duration) (resourceInfo, bool, error) {
	r.mu.Lock()
	info, ok := r.byGR[gr]
	fresh := time.Since(r.refreshed) < maxAge
	r.mu.Unlock()
	if ok && fresh {
		return info, true, nil
	}
	if err := r.refresh(ctx); err != nil {
		return info, ok, err
	}
	info, ok = r.get(gr)
	return info, ok, nil
}

// served reports whether the server serves gvr (from the cache).
func (r *resources) served(gvr schema.GroupVersionResource) bool {
	info, ok := r.get(gvr.GroupResource())
	return ok && info.GVR.Version == gvr.Version
}

// groupResource renders a GroupResource as metav1's.
func groupResource(gr schema.GroupResource) metav1.GroupResource {
	return metav1.GroupResource{Group: gr.Group, Resource: gr.Resource}
}
