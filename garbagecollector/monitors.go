package garbagecollector

import (
	"context"
	"sync"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ignoredResources are the resources the collector does not follow, as Kubernetes'
// garbage collector ignores them: Events, whose deletion never involves it.
var ignoredResources = map[schema.GroupResource]bool{
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// monitor follows one resource's objects (their metadata) into the graph.
type monitor struct {
	res     *registry.Resource // the definition it started with
	version string
	objects *followed
	stop    context.CancelFunc
	done    chan struct{}
}

// monitors keep a monitor for every resource of the registry the collector follows
// (persisted, not ignored), built-in or custom: started when a resource is served,
// kept while it is redefined (a CRD's new storage version) and still has the version
// the monitor reads, stopped when it no longer is (a CRD deleted), then the objects the
// monitor knew that are gone from storage are removed from the graph as deleted. A
// monitor is a client-go reflector of the store's objects into a followed store, which
// keeps their metadata.
type monitors struct {
	registry *registry.Registry
	store    *store.Store
	graph    *graph

	mu      sync.Mutex
	ctx     context.Context // the leader's term; nil once stopped
	running map[schema.GroupResource]*monitor
	wg      sync.WaitGroup
}

func newMonitors(ctx context.Context, reg *registry.Registry, st *store.Store, g *graph) *monitors {
	return &monitors{registry: reg, store: st, graph: g, ctx: ctx, running: map[schema.GroupResource]*monitor{}}
}

// sync starts and stops monitors to follow the registry.
func (m *monitors) sync() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil {
		return
	}
	served := map[schema.GroupResource]*registry.Resource{}
	for _, res := range m.registry.Resources() {
		if res.Persisted() && !ignoredResources[res.GroupResource()] && res.PreferredVersion() != "" {
			served[res.GroupResource()] = res
		}
	}
	for gr, mon := range m.running {
		res, ok := served[gr]
		if ok && res.Version(mon.version) != nil {
			continue
		}
		// Gone, or no longer knows the version the monitor reads in.
		delete(m.running, gr)
		m.retire(mon)
	}
	for gr, res := range served {
		if _, ok := m.running[gr]; !ok {
			m.running[gr] = m.start(res)
		}
	}
}

// start runs a monitor of res: a reflector of the store's objects (read from etcd,
// shared, never changed) into a followed store, whose changes the graph observes.
func (m *monitors) start(res *registry.Resource) *monitor {
	mon := &monitor{res: res, version: res.PreferredVersion(), done: make(chan struct{})}
	gv := res.GroupVersion(mon.version).String()
	kind := res.Names.Kind
	mon.objects = newFollowed(func(typ changeType, obj, old metav1.Object) {
		m.graph.observe(typ, gv, kind, obj, old)
	})
	lw := m.store.ListWatch(store.Source{Registry: m.registry, Resource: res.GroupResource(), Version: mon.version,
		Shared: true, FromStorage: true})
	reflector := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, mon.objects,
		cache.ReflectorOptions{Name: "garbage collector monitor of " + res.GroupResource().String()})
	ctx, cancel := context.WithCancel(m.ctx)
	mon.stop = cancel
	m.wg.Go(func() {
		defer close(mon.done)
		reflector.RunWithContext(ctx)
	})
	klog.FromContext(m.ctx).V(4).Info("Following resource", "resource", res.GroupResource(), "version", mon.version)
	return mon
}

// retire stops mon. The objects it knew that storage no longer holds (a CRD's custom
// resources, deleted before it) are then deleted from the graph, whether or not the
// monitor saw their deletion before it stopped.
func (m *monitors) retire(mon *monitor) {
	mon.stop()
	ctx := m.ctx
	m.wg.Go(func() {
		<-mon.done
		gv, kind := mon.res.GroupVersion(mon.version).String(), mon.res.Names.Kind
		for _, o := range mon.objects.list() {
			cur, err := m.store.Get(ctx, store.Ref{Resource: mon.res, Version: mon.version, Namespace: o.GetNamespace(), Name: o.GetName()}, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && cur.GetUID() != o.GetUID()) {
				m.graph.observe(deleted, gv, kind, o, nil)
			}
		}
	})
}

// synced reports whether every monitor has delivered its initial list.
func (m *monitors) synced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mon := range m.running {
		if !mon.objects.synced.Load() {
			return false
		}
	}
	return true
}

// held returns the monitor of gk and what it holds at namespace/name (nil if no
// monitor follows gk, or it holds no such object). A cluster-scoped kind's objects
// are looked up without the namespace.
func (m *monitors) held(gk schema.GroupKind, namespace, name string) (*monitor, *monitored) {
	m.mu.Lock()
	var mon *monitor
	for gr, r := range m.running {
		if gr.Group == gk.Group && r.res.Names.Kind == gk.Kind {
			mon = r
			break
		}
	}
	m.mu.Unlock()
	if mon == nil {
		return nil, nil
	}
	if !mon.res.Namespaced {
		namespace = ""
	}
	return mon, mon.objects.get(namespace, name)
}

// observed returns the object the monitor of ref's kind holds at ref's namespace and
// name, and its coordinates as observed, or nil.
func (m *monitors) observed(ref objectRef) (objectRef, metav1.Object) {
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	mon, o := m.held(gk, ref.Namespace, ref.Name)
	if o == nil {
		return ref, nil
	}
	return objectRef{APIVersion: mon.res.GroupVersion(mon.version).String(), Kind: gk.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID()}, o
}

// cached returns the metadata the monitor of gk last saw of namespace/name, or nil.
func (m *monitors) cached(gk schema.GroupKind, namespace, name string) *metav1.PartialObjectMetadata {
	if _, o := m.held(gk, namespace, name); o != nil {
		return o.partial()
	}
	return nil
}

// stop stops every monitor and waits for them.
func (m *monitors) stop() {
	m.mu.Lock()
	for _, mon := range m.running {
		mon.stop()
	}
	m.running, m.ctx = nil, nil
	m.mu.Unlock()
	m.wg.Wait()
}
