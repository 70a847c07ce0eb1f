package storageversion

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/wire"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// UpdaterHook is the post-start hook that finishes once every built-in resource's
// storage version is registered (kube-apiserver's name).
const UpdaterHook = "built-in-resources-storage-version-updater"

// Why writes are refused, besides the errors of failed writes.
var (
	// ErrShuttingDown: the server is stopping and has withdrawn its entries.
	ErrShuttingDown = errors.New("the server is shutting down")
	// ErrLeaseLapsed: the server's identity lease expired or was deleted, so peers may
	// have collected its entries; it re-registers once the lease is back.
	ErrLeaseLapsed = errors.New("the server's identity lease lapsed: its storage versions are being registered again")
	// ErrEntryChanged: the server's entry was removed or changed by someone else; it is
	// being written again.
	ErrEntryChanged = errors.New("this server's storage version entry was removed or changed: registering it again")
)

// Config configures a Manager.
type Config struct {
	// ServerID is the server's ID: its entries' apiServerID.
	ServerID string
	// Registry holds the resources the server serves; every resource in it when Start
	// runs is a built-in resource to register.
	Registry *registry.Registry
	// Store persists objects.
	Store *store.Store
	// LeaseValid, if set, reports whether the server's identity lease is valid at a
	// time (identity.Lease.Valid): while it is not, every tracked write is refused.
	LeaseValid func(now time.Time) bool
	// Metrics registers the storage version metrics (nil: none).
	Metrics prometheus.Registerer
	// ReconcileMetrics receives the reconcile runtime's samples (nil: none).
	ReconcileMetrics *reconcile.Metrics
	// Started is when the server began starting, for the registration-time metric.
	Started time.Time
	// EncryptionKeys, if set, says which encryption keys the server seals and opens a
	// resource's values with (encryption.Config.Keys); nil: plaintext. They are
	// reported next to the entry, and writes wait for them as for the entry.
	EncryptionKeys func(schema.GroupResource) wire.EncryptionKeys
	// Mirror, if set, reports an entry to an aggregator this server is registered
	// behind (package storageversion/publisher), after the local write and before the
	// resource's writes are let through: a server that switches a storage version tells
	// the aggregator before it encodes in it. Its error counts as the write's.
	Mirror func(ctx context.Context, gr schema.GroupResource, e Entry) error
}

// Manager keeps one server's entries in the StorageVersion objects true, and holds the
// writes of each resource until its entry is written. See the package documentation.
type Manager struct {
	cfg     Config
	objs    *objects
	metrics *metrics
	hook    *health.PostStartHook
	ctrl    *reconcile.Controller[schema.GroupResource]
	// informer follows every StorageVersion object.
	informer cache.SharedIndexInformer

	// locks serializes the writes of one resource's entry: a *sync.Mutex per
	// GroupResource.
	locks sync.Map

	mu      sync.RWMutex
	tracked map[schema.GroupResource]*tracked
	byName  map[string]*tracked
	// sharedOwners maps a resource that shares another's storage to that owner, whose
	// gate holds its writes.
	sharedOwners map[schema.GroupResource]schema.GroupResource
	stopping     bool
	// builtinFailing holds the built-in resources whose entry was never written, with
	// the last error (nil while the first attempt runs).
	builtinFailing map[schema.GroupResource]error
	// firstPending counts the built-in resources whose first attempt has not ended;
	// firstRound is closed when it reaches zero.
	firstPending int
	firstRound   chan struct{}

	agreementMu sync.Mutex
	unsetSince  map[string]time.Time

	// logger is Run's, for the informer's event handler.
	logger klog.Logger
}

// tracked is a resource this server persists and reports.
type tracked struct {
	gr     schema.GroupResource
	name   string
	custom bool
	gate   *gate
	// desired is the entry the server reports; owner the CustomResourceDefinition
	// owning the object (custom resources).
	desired atomic.Pointer[Entry]
	owner   atomic.Pointer[registry.OwnerRef]
	// verifiedRV is the revision at which the stored entry was last known to equal
	// desired; watch events at or before it are old news.
	verifiedRV atomic.Int64
	attempted  bool // guarded by Manager.mu
}

// shutdownTimeout bounds the withdrawal of the entries when the server stops.
const shutdownTimeout = 15 * time.Second

// NewManager returns the storage version manager of a server. Install Filter in the
// handler chain and the hook of PostStartHook in the health checks before serving;
// Run it once the server serves and its identity lease exists.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.ServerID == "" || cfg.Registry == nil || cfg.Store == nil {
		return nil, errors.New("storageversion: ServerID, Registry and Store are required")
	}
	if cfg.Started.IsZero() {
		cfg.Started = time.Now()
	}
	m := &Manager{
		cfg:            cfg,
		objs:           &objects{reg: cfg.Registry, store: cfg.Store, now: time.Now},
		metrics:        newMetrics(cfg.Metrics),
		hook:           health.NewPostStartHook(UpdaterHook),
		tracked:        map[schema.GroupResource]*tracked{},
		byName:         map[string]*tracked{},
		sharedOwners:   map[schema.GroupResource]schema.GroupResource{},
		builtinFailing: map[schema.GroupResource]error{},
		firstRound:     make(chan struct{}),
		unsetSince:     map[string]time.Time{},
	}
	m.ctrl = reconcile.New("storage-versions", reconcile.Func[schema.GroupResource](m.reconcile), reconcile.Options[schema.GroupResource]{
		Workers: 4,
		Backoff: reconcile.Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second},
		Metrics: cfg.ReconcileMetrics,
	})
	m.informer = cfg.Store.NewInformer(store.Source{Registry: cfg.Registry, Resource: GroupResource, Version: version}, nil)
	_, err := m.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { m.observe(obj, false) },
		UpdateFunc: func(_, obj interface{}) { m.observe(obj, false) },
		DeleteFunc: func(obj interface{}) { m.observe(obj, true) },
	})
	return m, err
}

// PostStartHook returns the hook UpdaterHook: not finished (with the failing resources
// and their errors) until every built-in resource is registered.
func (m *Manager) PostStartHook() *health.PostStartHook { return m.hook }

// Run tracks every resource of the registry as built-in and registers them (the
// reconcile runtime retries failures, forever), follows the StorageVersion objects so
// that an entry removed or changed by someone else is written again at once, and
// follows the registry so that resources it stops serving have their entry removed.
// WaitFirstRound waits for the first attempts. When ctx is done it withdraws the
// server's entries (see shutdown) and returns once all its work has stopped. Entries
// it cannot withdraw are logged: the garbage collector removes them once the identity
// lease expires.
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("storage-versions")
	ctx = klog.NewContext(ctx, logger)
	if _, err := m.objs.resource(); err != nil {
		return err
	}
	m.logger = logger
	m.trackBuiltins(ctx)
	var wg sync.WaitGroup
	wg.Go(reconcile.StartInformers(ctx, m.informer))
	wg.Go(m.cfg.Registry.OnChange(ctx, m.registryChanged))
	_ = m.ctrl.Run(ctx)
	wg.Wait()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	start := time.Now()
	if err := m.shutdown(sctx); err != nil {
		logger.Error(err, "Cannot withdraw every storage version entry; the garbage collector removes the rest once the identity lease expires")
	}
	logger.V(2).Info("Storage version entries withdrawn", "duration", time.Since(start))
	return nil
}

// trackBuiltins tracks every persisted built-in resource of the registry and
// queues it. Reviews store nothing: they have no entry, and the barrier lets them
// pass (the KEP's "not persisted" exemption). A resource sharing another's storage
// has no entry either: the barrier holds its writes at the owner's gate.
func (m *Manager) trackBuiltins(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, res := range m.cfg.Registry.Resources() {
		if res.Shared != nil {
			m.sharedOwners[res.GroupResource()] = res.Shared.Owner // its objects are the owner's, under its entry
		}
		if res.Owner != nil || !res.StoresOwn() {
			continue
		}
		t := m.trackLocked(res.GroupResource(), false)
		e := EntryFor(m.cfg.ServerID, res)
		t.desired.Store(&e)
		m.builtinFailing[t.gr] = nil
		m.firstPending++
	}
	if m.firstPending == 0 {
		close(m.firstRound)
		m.hook.Done()
	}
	for gr, t := range m.tracked {
		if !t.custom {
			m.ctrl.Add(gr)
		}
	}
	klog.FromContext(ctx).V(2).Info("Registering storage versions", "resources", m.firstPending)
}

// WaitFirstRound waits until every built-in resource has had one registration attempt
// (successful or not), or ctx is done.
func (m *Manager) WaitFirstRound(ctx context.Context) error {
	select {
	case <-m.firstRound:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// trackLocked adds a tracked resource with a closed gate. m.mu must be held.
func (m *Manager) trackLocked(gr schema.GroupResource, custom bool) *tracked {
	t := &tracked{gr: gr, name: wire.StorageVersionName(gr), custom: custom, gate: newGate()}
	m.tracked[gr] = t
	m.byName[t.name] = t
	return t
}

func (m *Manager) untrackLocked(gr schema.GroupResource) {
	if t, ok := m.tracked[gr]; ok {
		delete(m.tracked, gr)
		delete(m.byName, t.name)
	}
}

func (m *Manager) lookup(gr schema.GroupResource) *tracked {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.tracked[gr]
}

// gateHolder returns the tracked resource whose gate holds writes of gr: gr's own, or
// the owner's of the storage gr shares.
func (m *Manager) gateHolder(gr schema.GroupResource) *tracked {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if owner, ok := m.sharedOwners[gr]; ok {
		return m.tracked[owner]
	}
	return m.tracked[gr]
}

func (m *Manager) lockFor(gr schema.GroupResource) *sync.Mutex {
	l, _ := m.locks.LoadOrStore(gr, &sync.Mutex{})
	return l.(*sync.Mutex)
}

// registryChanged stops tracking the custom resources the registry no longer holds;
// workers then withdraw their entries.
func (m *Manager) registryChanged() {
	var gone []schema.GroupResource
	m.mu.Lock()
	for gr, t := range m.tracked {
		if !t.custom || m.cfg.Registry.Get(gr) != nil {
			continue
		}
		// A resource being published is tracked before it is put into the registry:
		// leave it to Publish, which puts it (a registry change, and another look) or
		// abandons it. (Untracking it here withdrew the entry Publish had just written,
		// for good: the safety suite's restarts found it.)
		lock := m.lockFor(gr)
		if !lock.TryLock() {
			continue
		}
		if m.cfg.Registry.Get(gr) == nil {
			m.untrackLocked(gr)
			gone = append(gone, gr)
		}
		lock.Unlock()
	}
	m.mu.Unlock()
	for _, gr := range gone {
		m.ctrl.Add(gr)
	}
}

// ResourcesSynced tells the manager that every resource the server serves is known
// (the stored CustomResourceDefinitions are served): entries of this server for
// resources it does not serve, left by an earlier run (a release that removed a
// resource, a CRD deleted while the server was down), are withdrawn.
func (m *Manager) ResourcesSynced(ctx context.Context) error {
	stored := map[schema.GroupResource]string{}
	if err := m.storedEntries(ctx, stored); err != nil {
		return err
	}
	for gr := range stored {
		if m.lookup(gr) == nil {
			m.ctrl.Add(gr)
		}
	}
	return nil
}

// Lapsed is called when the server's identity lease lapsed and was taken back: every
// entry may have been collected, so each resource's writes are refused until its
// entry is verified (and written again if need be).
func (m *Manager) Lapsed() {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for gr, t := range m.tracked {
		t.gate.close(ErrLeaseLapsed)
		t.verifiedRV.Store(0)
		m.ctrl.Add(gr)
	}
}

// shutdown withdraws the server's entries before it stops: writes of every tracked
// resource are refused (ErrShuttingDown), those under way are waited for, then every
// entry is removed (and objects left without entries deleted), so that peers agree on
// a common version without waiting for this server's lease to expire. Run calls it
// once its workers have stopped, while the server still serves; ctx bounds it.
//
// The entries removed are those of the tracked resources and every other entry of
// this server stored: a withdrawal queued once the workers had stopped (a custom
// resource's publication that failed, or its definition gone, as the server stopped)
// is done here, or it would wait for the garbage collector.
func (m *Manager) shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.stopping = true
	all := make([]*tracked, 0, len(m.tracked))
	for _, t := range m.tracked {
		all = append(all, t)
	}
	m.mu.Unlock()
	for _, t := range all {
		t.gate.close(ErrShuttingDown)
	}
	for _, t := range all {
		if err := t.gate.drain(ctx); err != nil {
			return fmt.Errorf("waiting for writes to %s: %w", t.gr, err)
		}
	}
	withdraw := make(map[schema.GroupResource]string, len(all))
	for _, t := range all {
		withdraw[t.gr] = t.name
	}
	if err := m.storedEntries(ctx, withdraw); err != nil {
		return err
	}
	var g errgroup.Group
	g.SetLimit(4)
	for gr, name := range withdraw {
		g.Go(func() error {
			lock := m.lockFor(gr)
			lock.Lock()
			defer lock.Unlock()
			if _, _, err := m.objs.removeEntries(ctx, name, m.isSelf); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// storedEntries adds to into the resources of every stored StorageVersion object that
// holds an entry of this server, by object name.
func (m *Manager) storedEntries(ctx context.Context, into map[schema.GroupResource]string) error {
	res, err := m.objs.resource()
	if err != nil {
		return err
	}
	list, err := m.cfg.Store.List(ctx, store.Ref{Resource: res, Version: version}, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the storage versions: %w", err)
	}
	for i := range list.Items {
		u := &list.Items[i]
		gr, ok := wire.ParseStorageVersionName(u.GetName())
		if !ok {
			continue
		}
		if sv, err := fromUnstructured(u); err == nil && findEntry(&sv.Status, m.cfg.ServerID) != nil {
			into[gr] = u.GetName()
		}
	}
	return nil
}
