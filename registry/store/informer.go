package store

import (
	"context"
	"errors"
	"fmt"

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
	// Shared hands the informer the objects of its watch events uncopied, though
	// other watches share them: only for an informer whose transform reads them and
	// keeps only objects it builds itself (a metadata-only informer), so that no one
	// ever modifies them.
	Shared bool
	// FromStorage reads etcd, never the resource's watch cache, and does not start
	// it (Store.ListStorage, Store.WatchStorage): for an informer that follows every
	// resource, such as the garbage collector's, so that following a resource does
	// not make the server keep all of its objects in memory.
	FromStorage bool
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
			if src.FromStorage {
				return s.ListStorage(ctx, r, opts)
			}
			return s.List(ctx, r, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			r, err := ref(&opts)
			if err != nil {
				return nil, err
			}
			watchFn := s.Watch
			if src.FromStorage {
				watchFn = s.WatchStorage
			}
			w, err := watchFn(ctx, r, opts)
			if err != nil {
				return nil, err
			}
			// Informers hand their objects to code that may change them.
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if o, ok := e.Object.(*SharedObject); ok && src.Shared {
					e.Object = o.Unstructured
					return e, true
				}
				e.Object = Private(e.Object)
				return e, true
			}), nil
		},
	}
}

// NewInformer returns a shared informer of src's objects (unstructured), without
// resync, with indexers.
func (s *Store) NewInformer(src Source, indexers cache.Indexers) cache.SharedIndexInformer {
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	return cache.NewSharedIndexInformer(s.ListWatch(src), &unstructured.Unstructured{}, 0, indexers)
}
