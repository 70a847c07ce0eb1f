package trigger

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/discovery"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// errGone means a migration the trigger meant to act on is no longer in its cache.
var errGone = errors.New("migration no longer in the cache")

// byResource indexes StorageVersionMigrations by "<group>/<resource>" of spec.resource.
const byResource = "resource"

func resourceIndex(obj interface{}) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	g, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "group")
	r, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "resource")
	return []string{g + "/" + r}, nil
}

// expectationTTL bounds how long the trigger waits for a migration it created to
// appear in its cache before it looks at the resource again without it.
const expectationTTL = 30 * time.Second

// Config tunes the trigger.
type Config struct {
	// PollInterval is how often discovery is read and every StorageState looked at;
	// a state's heartbeat is renewed at the first poll past HeartbeatInterval.
	PollInterval time.Duration
	// StalenessWindow is the heartbeat age past which a StorageState is reset to
	// "Unknown" and its resource migrated again.
	StalenessWindow time.Duration
	// RetryFailedAfter is the wait before a failed migration is started again,
	// doubling with each consecutive failure.
	RetryFailedAfter time.Duration
	// HistoryLimit is how many ended migrations the trigger keeps per resource.
	HistoryLimit int
	// IgnoredResources are never migrated.
	IgnoredResources []schema.GroupResource
	// NoStorageVersions works from discovery alone, even where the StorageVersion API
	// is served (a controller manager whose StorageVersionAPI gate is off).
	NoStorageVersions bool
	// Metrics receives the reconcile runtime's samples (nil: none).
	Metrics *reconcile.Metrics
}

// HeartbeatInterval is how old a StorageState's heartbeat may grow before the trigger
// renews it: a quarter of the staleness window, or the poll interval if that is
// longer. A heartbeat says the trigger follows the resource; it is not rewritten at
// every poll, which would make every idle resource a write a poll (one a minute, and
// one every 200ms with a test's poll interval) for nothing the staleness check needs.
// While the trigger runs, a heartbeat is never older than this interval and a poll,
// well within the window; once it stops, its states go stale at most the window after
// its last poll and at most this interval earlier (three quarters of the window with
// the defaults): a reset may come early, never late. A state the trigger changes gets
// a heartbeat with the change.
func HeartbeatInterval(poll, staleness time.Duration) time.Duration {
	return max(poll, staleness/4)
}

// Trigger keeps one StorageState per persisted resource and starts migrations, as
// plan says, from the StorageVersion objects when the server serves them (watched),
// else from discovery's storageVersionHash (polled). It reconciles one resource at a
// time on the reconcile runtime.
type Trigger struct {
	dyn        dynamic.Interface
	res        *discovery.Resources
	factory    dynamicinformer.DynamicSharedInformerFactory
	states     cache.SharedIndexInformer
	migrations cache.SharedIndexInformer
	ctrl       *reconcile.Controller[schema.GroupResource]
	// poller reads discovery every poll: its one key's reconcile is pollOnce, then a
	// requeue after poll.
	poller  *reconcile.Controller[string]
	cfg     lifecycleConfig
	poll    time.Duration
	history int
	ignored []schema.GroupResource
	noSVs   bool // never watch StorageVersions
	now     func() time.Time

	mu       sync.Mutex
	versions cache.SharedIndexInformer // nil until the StorageVersion API is seen
	expect   map[schema.GroupResource]expectation
	// sightings are what the trigger observed when it first saw pending migrations it
	// did not create, by UID (see adopt.go).
	sightings map[types.UID]sighting
	// aggregated are the groups APIServices register to backends, as read at the
	// last poll (before discovery: a group discovery lists is classified).
	aggregated map[string]bool
}

// expectation is a migration the trigger created and has not seen in its cache yet.
type expectation struct {
	name    string
	created time.Time
}

// New returns a trigger over the StorageStates of factory and the migrations of
// migrations (an informer of factory), which it indexes by resource.
func New(dyn dynamic.Interface, res *discovery.Resources, factory dynamicinformer.DynamicSharedInformerFactory,
	migrations cache.SharedIndexInformer, cfg Config) (*Trigger, error) {
	t := &Trigger{
		dyn: dyn, res: res, factory: factory, migrations: migrations,
		states:    factory.ForResource(migrationapi.StorageStates).Informer(),
		cfg:       lifecycleConfig{Heartbeat: HeartbeatInterval(cfg.PollInterval, cfg.StalenessWindow), Staleness: cfg.StalenessWindow, RetryFailed: cfg.RetryFailedAfter},
		poll:      cfg.PollInterval,
		history:   cfg.HistoryLimit,
		ignored:   cfg.IgnoredResources,
		noSVs:     cfg.NoStorageVersions,
		now:       time.Now,
		expect:    map[schema.GroupResource]expectation{},
		sightings: map[types.UID]sighting{},
	}
	t.ctrl = reconcile.New("storage-migration-trigger", reconcile.Reconciler[schema.GroupResource](t), reconcile.Options[schema.GroupResource]{
		Backoff: reconcile.Backoff{Base: 100 * time.Millisecond, Max: time.Minute},
		Metrics: cfg.Metrics,
	})
	t.poller = reconcile.New("storage-migration-discovery", reconcile.Func[string](func(ctx context.Context, _ string) (reconcile.Result, error) {
		t.pollOnce(ctx)
		return reconcile.Result{RequeueAfter: t.poll}, nil
	}), reconcile.Options[string]{Metrics: cfg.Metrics})
	if err := migrations.AddIndexers(cache.Indexers{byResource: resourceIndex}); err != nil {
		return nil, err
	}
	// One handler notes sightings before it queues the resource, so that a reconcile
	// never sees a migration pending before its sighting (see adopt.go).
	queue := t.handler(func(u *unstructured.Unstructured) (schema.GroupResource, bool) {
		keys, _ := resourceIndex(u)
		g, r, _ := strings.Cut(keys[0], "/")
		return schema.GroupResource{Group: g, Resource: r}, r != ""
	})
	sightings := t.sightingHandler()
	if _, err := migrations.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { sightings.OnAdd(obj, false); queue.OnAdd(obj, false) },
		UpdateFunc: func(old, obj interface{}) {
			sightings.OnUpdate(old, obj)
			queue.OnUpdate(old, obj)
		},
		DeleteFunc: func(obj interface{}) { sightings.OnDelete(obj); queue.OnDelete(obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := t.states.AddEventHandler(t.handler(func(u *unstructured.Unstructured) (schema.GroupResource, bool) {
		g, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "group")
		r, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "resource")
		return schema.GroupResource{Group: g, Resource: r}, r != ""
	})); err != nil {
		return nil, err
	}
	return t, nil
}

// handler queues the resource an object is about.
func (t *Trigger) handler(key func(*unstructured.Unstructured) (schema.GroupResource, bool)) cache.ResourceEventHandler {
	add := func(obj interface{}) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if gr, ok := key(u); ok {
				t.ctrl.Add(gr)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj interface{}) { add(obj) }, DeleteFunc: add}
}

// storageVersionKey returns the resource a StorageVersion object is about.
func storageVersionKey(u *unstructured.Unstructured) (schema.GroupResource, bool) {
	return wire.ParseStorageVersionName(u.GetName())
}

// HasSynced reports whether the trigger's StorageState informer has synced.
func (t *Trigger) HasSynced() bool { return t.states.HasSynced() }

// Run polls discovery and reconciles resources until ctx is done, and returns once
// its workers have stopped.
func (t *Trigger) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("trigger")
	ctx = klog.NewContext(ctx, logger)
	// Only after the first poll is it known whether StorageVersions are served (and
	// watched): no resource is looked at from discovery alone before.
	t.pollOnce(ctx)
	t.poller.AddAfter(pollKey, t.poll)
	var wg sync.WaitGroup
	wg.Go(func() { _ = t.ctrl.Run(ctx) })
	wg.Go(func() { _ = t.poller.Run(ctx) })
	wg.Wait()
	return nil
}

// pollKey is the one key of the trigger's poller.
const pollKey = "discovery"

// pollOnce reads discovery, starts watching StorageVersions once they are served,
// and queues every resource.
func (t *Trigger) pollOnce(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("Polling discovery")
	t.readAggregated(ctx)
	if err := t.res.Refresh(ctx); err != nil {
		logger.Error(err, "Discovery failed; polling again later")
	}
	t.mu.Lock()
	watching := t.versions != nil
	t.mu.Unlock()
	if !watching && !t.noSVs && t.res.Served(migrationapi.StorageVersions) {
		inf := t.factory.ForResource(migrationapi.StorageVersions).Informer()
		if _, err := inf.AddEventHandler(t.handler(storageVersionKey)); err != nil {
			logger.Error(err, "Cannot watch StorageVersions")
		} else {
			t.factory.Start(ctx.Done())
			if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.mu.Lock()
				t.versions = inf
				t.mu.Unlock()
				logger.Info("Watching StorageVersion objects: migrations start when the API servers agree on an encoding version")
			}
		}
	}
	seen := map[schema.GroupResource]bool{}
	for _, gr := range t.res.All() {
		seen[gr] = true
	}
	for _, obj := range t.states.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			g, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "group")
			r, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "resource")
			seen[schema.GroupResource{Group: g, Resource: r}] = true
		}
	}
	if v := t.versionsInformer(); v != nil {
		for _, obj := range v.GetStore().List() {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				if gr, ok := storageVersionKey(u); ok {
					seen[gr] = true
				}
			}
		}
	}
	for gr := range seen {
		t.ctrl.Add(gr)
	}
}

func (t *Trigger) versionsInformer() cache.SharedIndexInformer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.versions
}

// readAggregated reads which groups APIServices register to backends (none where
// APIServices are not served).
func (t *Trigger) readAggregated(ctx context.Context) {
	groups := map[string]bool{}
	list, err := t.dyn.Resource(migrationapi.APIServices).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		for _, s := range list.Items {
			svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service")
			group, _, _ := unstructured.NestedString(s.Object, "spec", "group")
			if svc != nil {
				groups[group] = true
			}
		}
	case apierrors.IsNotFound(err):
	default:
		klog.FromContext(ctx).Error(err, "Cannot read the APIServices; keeping what was read before")
		return
	}
	t.mu.Lock()
	t.aggregated = groups
	t.mu.Unlock()
}

// isAggregated reports whether group is an aggregated API, as last read.
func (t *Trigger) isAggregated(group string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.aggregated[group]
}
