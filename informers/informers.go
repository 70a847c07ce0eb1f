package informers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// ErrNotSynced means a started informer has not delivered its initial list yet.
var ErrNotSynced = errors.New("informers not synced")

// Shared are a server's shared in-process informers. Safe for concurrent use.
type Shared struct {
	registry *registry.Registry
	store    *store.Store

	mu      sync.Mutex
	typed   map[schema.GroupResource]cache.SharedIndexInformer
	started map[cache.SharedIndexInformer]string // the component that started it
}

// New returns the shared informers of the resources of reg, read from st.
func New(reg *registry.Registry, st *store.Store) *Shared {
	return &Shared{registry: reg, store: st, typed: map[schema.GroupResource]cache.SharedIndexInformer{},
		started: map[cache.SharedIndexInformer]string{}}
}

// Typed returns the informer of resource gr in v1, whose objects are of newObj's type
// and indexed by namespace: one per resource, whoever asks. Start it with Start.
func (s *Shared) Typed(gr schema.GroupResource, newObj func() runtime.Object) cache.SharedIndexInformer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inf, ok := s.typed[gr]; ok {
		return inf
	}
	inf := s.store.NewInformer(store.Source{Registry: s.registry, Resource: gr, Version: "v1"},
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = inf.SetTransform(func(obj interface{}) (interface{}, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		out := newObj()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", gr, u.GetName(), err)
		}
		return out, nil
	})
	s.typed[gr] = inf
	return inf
}

// Start starts, as one component of g named name, those of infs no component has
// started yet, and returns once they have all synced (notSynced is what its readiness
// says meanwhile). Synced counts them from here on.
func (s *Shared) Start(ctx context.Context, g *lifecycle.Group, name string, notSynced error, infs ...cache.SharedIndexInformer) error {
	fresh := s.claim(name, infs)
	if len(fresh) == 0 {
		return nil
	}
	return g.Start(ctx, component(name, notSynced, fresh...))
}

// claim records those of infs not started yet as started by component name, and
// returns them.
func (s *Shared) claim(name string, infs []cache.SharedIndexInformer) []cache.SharedIndexInformer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fresh []cache.SharedIndexInformer
	for _, inf := range infs {
		if _, ok := s.started[inf]; !ok {
			s.started[inf] = name
			fresh = append(fresh, inf)
		}
	}
	return fresh
}

// Synced returns nil when every informer started through Start has synced, else an
// error wrapping ErrNotSynced that names the components whose informers have not.
func (s *Shared) Synced() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pending []string
	for inf, name := range s.started {
		if !inf.HasSynced() && !slices.Contains(pending, name) {
			pending = append(pending, name)
		}
	}
	if len(pending) > 0 {
		slices.Sort(pending)
		return fmt.Errorf("%w: %s", ErrNotSynced, strings.Join(pending, ", "))
	}
	return nil
}

// SyncCheck names the readyz check that fails while an in-process informer the
// server runs has not synced (Check).
const SyncCheck = "informer-sync"

// Check returns the readyz check SyncCheck: Synced, joined with the errors of more,
// the informers the server runs apart from the shared ones (admission's).
func (s *Shared) Check(more ...func() error) health.Checker {
	return health.NamedCheck(SyncCheck, func(*http.Request) error {
		errs := []error{s.Synced()}
		for _, synced := range more {
			errs = append(errs, synced())
		}
		return errors.Join(errs...)
	})
}

// component runs infs until stopped; it is ready once they have all synced, else
// notSynced says what is missing.
func component(name string, notSynced error, infs ...cache.SharedIndexInformer) lifecycle.Component {
	return lifecycle.Component{Name: name,
		Run: func(ctx context.Context) error {
			reconcile.StartInformers(ctx, infs...)()
			return nil
		},
		Ready: func() error {
			for _, inf := range infs {
				if !inf.HasSynced() {
					return notSynced
				}
			}
			return nil
		},
	}
}
