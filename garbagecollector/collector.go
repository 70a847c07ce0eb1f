package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Defaults of Config.
const (
	DefaultWorkers = 20 // kube-controller-manager's --concurrent-gc-syncs
	// initialSyncTimeout bounds the wait for the monitors' initial lists before the
	// workers start (as in Kubernetes): a resource that cannot be listed must not stop
	// collection of the others.
	initialSyncTimeout = 30 * time.Second
)

// eventSource is the component the collector's Events name.
const eventSource = "garbage-collector-controller"

// Config configures a Collector.
type Config struct {
	// Registry and Store are the server's: the monitors follow the registry's
	// resources through the store (client-go reflectors of its objects).
	Registry *registry.Registry
	Store    *store.Store
	// RESTConfig reaches this server as itself: objects are read, deleted and changed
	// through it, and Events are written with it.
	RESTConfig *rest.Config
	// Election elects the server whose collector collects (the server's election of
	// its controllers). Its lease must be shorter than the servers' identity leases,
	// so that a new leader collects before a dead one's identity lease expires.
	Election reconcile.Elector
	// Workers is how many objects are looked at at once (default DefaultWorkers), and
	// as many owners' dependents orphaned.
	Workers int
	// ReconcileMetrics receives the reconcile runtime's samples (nil: none).
	ReconcileMetrics *reconcile.Metrics
}

// Collector is the garbage collector of one server. Every server runs one; they elect
// a leader, which alone collects.
type Collector struct {
	cfg    Config
	client kubernetes.Interface
	meta   metadata.Interface
}

// New returns a collector; Run starts it.
func New(cfg Config) (*Collector, error) {
	if cfg.Registry == nil || cfg.Store == nil || cfg.RESTConfig == nil || cfg.Election == nil {
		return nil, errors.New("garbagecollector: the collector needs Registry, Store, RESTConfig and Election")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	restCfg := rest.CopyConfig(cfg.RESTConfig)
	restCfg.QPS = -1
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("the garbage collector's client: %w", err)
	}
	meta, err := metadata.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("the garbage collector's client: %w", err)
	}
	return &Collector{cfg: cfg, client: client, meta: meta}, nil
}

// Run collects while the server leads its election, until ctx is done.
func (c *Collector) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("garbage-collector"))
	events := record.NewBroadcaster(record.WithContext(ctx))
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
	recorder := events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: eventSource})
	return c.cfg.Election.RunElected(ctx, func(ctx context.Context) { c.lead(ctx, recorder) })
}

// term is one term of leadership: a graph built afresh from the monitors, and the two
// controllers of the reconcile runtime, attempt to delete and attempt to orphan, both
// keyed by uid. Nothing carries over from a previous term, this server's or another's:
// the new leader continues from what it reads.
type term struct {
	graph    *graph
	monitors *monitors
	objects  *objects
	deleter  *reconcile.Controller[types.UID]
	orphaner *reconcile.Controller[types.UID]
	recorder record.EventRecorder

	mu sync.Mutex
	// unknownKinds are the objects whose owner references name a kind not served:
	// looked at again when the registry changes.
	unknownKinds map[types.UID]struct{}
}

// waitForKinds remembers that uid waits for a kind to be served.
func (t *term) waitForKinds(uid types.UID) {
	t.mu.Lock()
	t.unknownKinds[uid] = struct{}{}
	t.mu.Unlock()
}

// registryChanged follows the registry: monitors start and stop, and the objects that
// waited for a kind are looked at again.
func (t *term) registryChanged() {
	t.monitors.sync()
	t.mu.Lock()
	waiting := t.unknownKinds
	t.unknownKinds = map[types.UID]struct{}{}
	t.mu.Unlock()
	for uid := range waiting {
		t.deleter.Add(uid)
	}
}

// lead collects until ctx is done (leadership lost).
func (c *Collector) lead(ctx context.Context, recorder record.EventRecorder) {
	logger := klog.FromContext(ctx)
	t := &term{recorder: recorder, unknownKinds: map[types.UID]struct{}{}}
	opts := reconcile.Options[types.UID]{Workers: c.cfg.Workers, Metrics: c.cfg.ReconcileMetrics}
	t.deleter = reconcile.New("garbage-collector-delete", reconcile.Func[types.UID](t.attemptToDelete), opts)
	t.orphaner = reconcile.New("garbage-collector-orphan", reconcile.Func[types.UID](t.attemptToOrphan), opts)
	t.graph = newGraph(queues{delete: t.deleter.Add, orphan: t.orphaner.Add, invalidNamespace: t.reportInvalidNamespace})
	t.monitors = newMonitors(ctx, c.cfg.Registry, c.cfg.Store, t.graph)
	t.graph.lookup = t.monitors.observed
	t.objects = &objects{registry: c.cfg.Registry, client: c.meta, monitors: t.monitors}
	defer t.monitors.stop()
	// A resource served or withdrawn (a CRD) starts or stops its monitor.
	defer c.cfg.Registry.OnChange(ctx, t.registryChanged)()
	t.monitors.sync()
	syncCtx, cancel := context.WithTimeout(ctx, initialSyncTimeout)
	err := wait.PollUntilContextCancel(syncCtx, 10*time.Millisecond, true, func(context.Context) (bool, error) { return t.monitors.synced(), nil })
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		logger.Info("Not every resource could be listed; collecting anyway", "waited", initialSyncTimeout)
	}
	logger.V(2).Info("Collecting garbage")
	var wg sync.WaitGroup
	wg.Go(func() { _ = t.deleter.Run(ctx) })
	_ = t.orphaner.Run(ctx)
	wg.Wait()
}

// reportInvalidNamespace emits, on dependent, the Warning Kubernetes' collector emits
// for a reference to an owner in another namespace (which cannot be its owner).
func (t *term) reportInvalidNamespace(dependent objectRef, owner metav1.OwnerReference) {
	ref := &corev1.ObjectReference{Kind: dependent.Kind, APIVersion: dependent.APIVersion, Namespace: dependent.Namespace, Name: dependent.Name, UID: dependent.UID}
	invalid := refOf(owner, dependent.Namespace)
	t.recorder.Eventf(ref, corev1.EventTypeWarning, "OwnerRefInvalidNamespace", "ownerRef %s does not exist in namespace %q", invalid, dependent.Namespace)
}
