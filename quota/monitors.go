package quota

import (
	"context"
	"sync"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// monitors keep, for every resource a quota counts objects of, an in-process
// informer of those objects (their metadata only), whose deletions give usage back.
// A resource not served has no objects; its monitor starts once it is served and
// stops when it no longer is.
type monitors struct {
	registry *registry.Registry
	store    *store.Store
	// deleted is called with the namespace of every object deleted.
	deleted func(namespace string)
	// synced is called once a new monitor has synced: objects deleted before it
	// watched were never reported, so every quota must be counted again.
	synced func()

	mu      sync.Mutex
	ctx     context.Context                             // the leader's; nil once stopped
	running map[schema.GroupResource]context.CancelFunc // stops each monitor
	wg      sync.WaitGroup
}

func newMonitors(ctx context.Context, reg *registry.Registry, st *store.Store, deleted func(string), synced func()) *monitors {
	return &monitors{registry: reg, store: st, deleted: deleted, synced: synced, ctx: ctx, running: map[schema.GroupResource]context.CancelFunc{}}
}

// ensure starts gr's monitor if gr is served and stops it if gr no longer is. A
// monitor follows its resource through redefinitions (the store's informers look
// the definition up at every list and watch).
func (m *monitors) ensure(gr schema.GroupResource) error {
	res := m.registry.Get(gr)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil {
		return context.Canceled
	}
	stop, running := m.running[gr]
	switch {
	case running && res != nil:
		return nil
	case running:
		stop()
		delete(m.running, gr)
		return nil
	case res == nil:
		return nil
	}
	version := res.PreferredVersion()
	inf := m.store.NewInformer(store.Source{Registry: m.registry, Resource: gr, Version: version}, nil)
	if err := inf.SetTransform(metadataOnly); err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: m.onDelete}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.running[gr] = cancel
	m.wg.Go(func() { inf.RunWithContext(ctx) })
	m.wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			m.synced()
		}
	})
	return nil
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
	for _, stop := range m.running {
		stop()
	}
	m.running, m.ctx = nil, nil
	m.mu.Unlock()
	m.wg.Wait()
}

// metadataOnly keeps what a deletion event needs of an object, its identity, so that
// a monitor's memory grows with the number of objects, not their size.
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
