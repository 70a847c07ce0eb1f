package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/concordproject/concord/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ErrNotServed means that a resource an informer follows is not in the registry.
var ErrNotServed = errors.New("resource not served")

// Source names what an in-process informer follows: one resource of a registry, read
// in Version, in Namespace ("" for all), optionally narrowed by label and field
// selectors.
type Source struct {
	Registry      *registry.Registry
	Resource      schema.GroupResource
	Version       string
	Namespace     string
	LabelSelector string
	FieldSelector string
}

// ListWatch lists and watches src through s, for client-go informers inside the
// server. The definition is looked up at every call, so an informer follows a
// resource redefined at run time, and reports ErrNotServed (its reflector retries)
// while the resource is not served.
func (s *Store) ListWatch(src Source) *cache.ListWatch {
	ref := func(opts *metav1.ListOptions) (Ref, error) {
		res := src.Registry.Get(src.Resource)
		if res == nil {
			return Ref{}, fmt.Errorf("%w: %s", ErrNotServed, src.Resource)
		}
		if src.LabelSelector != "" {
			opts.LabelSelector = src.LabelSelector
		}
		if src.FieldSelector != "" {
			opts.FieldSelector = src.FieldSelector
		}
		return Ref{Resource: res, Version: src.Version, Namespace: src.Namespace}, nil
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			r, err := ref(&opts)
			if err != nil {
				return nil, err
			}
			return s.List(ctx, r, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			r, err := ref(&opts)
			if err != nil {
				return nil, err
			}
			w, err := s.Watch(ctx, r, opts)
			if err != nil {
				return nil, err
			}
			// Informers hand their objects to code that may change them.
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				e.Object = Private(e.Object)
				return e, true
			}), nil
		},
	}
}

// NewInformer returns a shared informer of src's objects (unstructured), without
// resync, with indexers. The store keeps track of it: InformersSynced reports it
// while it runs and has not synced.
func (s *Store) NewInformer(src Source, indexers cache.Indexers) cache.SharedIndexInformer {
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	inf := &trackedInformer{
		SharedIndexInformer: cache.NewSharedIndexInformer(s.ListWatch(src), &unstructured.Unstructured{}, 0, indexers),
		name:                src.Resource.String(),
	}
	s.informersMu.Lock()
	defer s.informersMu.Unlock()
	s.informers = slices.DeleteFunc(s.informers, func(t *trackedInformer) bool { return t.started.Load() && t.IsStopped() })
	s.informers = append(s.informers, inf)
	return inf
}

// ErrInformersNotSynced: an informer the store made runs and has not delivered its
// initial list yet.
var ErrInformersNotSynced = errors.New("informers not synced")

// InformersSynced returns nil when every informer NewInformer made that runs has
// delivered its initial list, else ErrInformersNotSynced naming their resources:
// the server's "informer-sync" readiness check.
func (s *Store) InformersSynced() error {
	s.informersMu.Lock()
	defer s.informersMu.Unlock()
	var pending []string
	for _, inf := range s.informers {
		if inf.started.Load() && !inf.IsStopped() && !inf.HasSynced() {
			pending = append(pending, inf.name)
		}
	}
	if len(pending) > 0 {
		slices.Sort(pending)
		return fmt.Errorf("%w: %d of %s", ErrInformersNotSynced, len(pending), strings.Join(slices.Compact(pending), ", "))
	}
	return nil
}

// trackedInformer is an informer the store made, which knows whether it was started.
type trackedInformer struct {
	cache.SharedIndexInformer
	name    string
	started atomic.Bool
}

func (t *trackedInformer) Run(stop <-chan struct{}) {
	t.started.Store(true)
	t.SharedIndexInformer.Run(stop)
}

func (t *trackedInformer) RunWithContext(ctx context.Context) {
	t.started.Store(true)
	t.SharedIndexInformer.RunWithContext(ctx)
}
