package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/tools/cache"
)

// ErrMonitorNotSynced means the objects of a counted resource have not all been read yet.
var ErrMonitorNotSynced = errors.New("the objects of the resource have not all been read yet")

// monitors keep, for every resource a quota counts objects of, an in-process
// informer of those objects (their metadata only), which the usage controller counts
// and whose deletions give usage back. A resource not served has no objects; its
// monitor starts once it is served and stops when it no longer is.
type monitors struct {
	registry *registry.Registry
	store    *store.Store
	// deleted is called with the namespace of every object deleted.
	deleted func(namespace string)

	mu      sync.Mutex
	ctx     context.Context // the leader's; nil once stopped
	running map[schema.GroupResource]*monitor
	wg      sync.WaitGroup
}

type monitor struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
}

func newMonitors(ctx context.Context, reg *registry.Registry, st *store.Store, deleted func(string)) *monitors {
	return &monitors{registry: reg, store: st, deleted: deleted, ctx: ctx, running: map[schema.GroupResource]*monitor{}}
}

// listFunc returns the function the object-count evaluator of gr lists with.
func (m *monitors) listFunc(gr schema.GroupResource) generic.ListFuncByNamespace {
	return func(namespace string) ([]runtime.Object, error) { return m.list(gr, namespace) }
}

// list returns the objects of gr in namespace, starting gr's monitor if needed.
func (m *monitors) list(gr schema.GroupResource, namespace string) ([]runtime.Object, error) {
	mon, err := m.ensure(gr)
	if err != nil || mon == nil {
		return nil, err // not served: no objects
	}
	if !mon.informer.HasSynced() {
		return nil, fmt.Errorf("%w: %s", ErrMonitorNotSynced, gr)
	}
	items, err := mon.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(runtime.Object); ok {
			out = append(out, obj)
		}
	}
	return out, nil
}

// ensure returns the running monitor of gr, starting it if gr is served and
// stopping it if gr no longer is; nil if gr is not served. A monitor follows its
// resource through redefinitions (the store's informers look the definition up at
// every list and watch).
func (m *monitors) ensure(gr schema.GroupResource) (*monitor, error) {
	res := m.registry.Get(gr)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil {
		return nil, context.Canceled
	}
	mon := m.running[gr]
	switch {
	case mon != nil && res != nil:
		return mon, nil
	case mon != nil:
		mon.cancel()
		delete(m.running, gr)
		return nil, nil
	case res == nil:
		return nil, nil
	}
	version := res.PreferredVersion()
	inf := m.store.NewInformer(store.Source{Registry: m.registry, Resource: gr, Version: version},
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := inf.SetTransform(metadataOnly); err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: m.onDelete}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(m.ctx)
	mon = &monitor{informer: inf, cancel: cancel}
	m.running[gr] = mon
	m.wg.Go(func() { inf.RunWithContext(ctx) })
	return mon, nil
}

func (m *monitors) onDelete(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetNamespace() != "" {
		m.deleted(u.GetNamespace())
	}
}

// stop stops every monitor and waits for their informers to return.
func (m *monitors) stop() {
	m.mu.Lock()
	for _, mon := range m.running {
		mon.cancel()
	}
	m.running, m.ctx = nil, nil
	m.mu.Unlock()
	m.wg.Wait()
}

// metadataOnly keeps what counting needs of an object, its identity, so that a
// monitor's memory grows with the number of objects, not their size.
func metadataOnly(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	slim := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
	slim.SetName(u.GetName())
	slim.SetNamespace(u.GetNamespace())
	slim.SetUID(u.GetUID())
	slim.SetResourceVersion(u.GetResourceVersion())
	return slim, nil
}
