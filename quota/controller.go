package quota

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of ControllerConfig.
const (
	DefaultResyncPeriod = 5 * time.Minute // kube-controller-manager's --resource-quota-sync-period
	defaultWorkers      = 5               // its --concurrent-resource-quota-syncs
	// givenBackRecount is how long a recount that would give some of a quota's usage
	// back waits for a second recount to agree before it is written (see
	// usage.reconcile).
	givenBackRecount = time.Second
)

// ControllerConfig configures a Controller.
type ControllerConfig struct {
	// Registry and Store are the server's: counted objects are read in process.
	Registry *registry.Registry
	Store    *store.Store
	// RESTConfig reaches this server as itself: the quotas are read and their status
	// written through it.
	RESTConfig *rest.Config
	// Election elects the server that keeps the quotas' status (the server's
	// election of its controllers).
	Election reconcile.Elector
	// ResyncPeriod is how often every quota's usage is recalculated in full, which
	// corrects a charge for a write that then failed (default DefaultResyncPeriod).
	ResyncPeriod time.Duration
	// ReconcileMetrics receives the reconcile runtime's samples (nil: none).
	ReconcileMetrics *reconcile.Metrics
}

// Controller keeps every ResourceQuota's status: status.hard mirrors spec.hard and
// status.used counts the objects of the quota's namespace, in etcd.
// Admission charges a write to the quotas before it happens; the controller
// recalculates a quota when it is created, when its spec changes (or its status.hard
// no longer mirrors it), when an object it counts is deleted, and every ResyncPeriod.
// Every server runs one; they elect a leader, which alone writes.
type Controller struct {
	cfg    ControllerConfig
	client kubernetes.Interface
}

// NewController returns a usage controller; Run starts it.
func NewController(cfg ControllerConfig) (*Controller, error) {
	if cfg.Registry == nil || cfg.Store == nil || cfg.RESTConfig == nil || cfg.Election == nil {
		return nil, errors.New("quota: the controller needs Registry, Store, RESTConfig and Election")
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	restCfg := rest.CopyConfig(cfg.RESTConfig)
	restCfg.QPS = -1
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, client: client}, nil
}

// Run keeps the quotas' status while the server leads its election, until ctx is
// done.
func (c *Controller) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("resourcequota"))
	return c.cfg.Election.RunElected(ctx, c.lead)
}

// usage is one term of leadership: the quotas' informer, the monitors of counted
// resources and the reconcile controller.
type usage struct {
	ctx        context.Context // the term's
	cfg        ControllerConfig
	client     kubernetes.Interface
	quotas     corev1listers.ResourceQuotaLister
	monitors   *monitors
	evaluators quota.Registry
	ctrl       *reconcile.Controller[types.NamespacedName]

	// givenBack holds, per quota, when a recount first found less usage than its
	// status says: the give-back is written once a recount givenBackRecount later
	// still finds it (workers reconcile different quotas at once).
	mu        sync.Mutex
	givenBack map[types.NamespacedName]time.Time
	clock     clock.PassiveClock
}

// lead keeps the quotas' status until ctx is done (leadership lost).
func (c *Controller) lead(ctx context.Context) {
	factory := informers.NewSharedInformerFactory(c.client, 0)
	informer := factory.Core().V1().ResourceQuotas()
	u := &usage{ctx: ctx, cfg: c.cfg, client: c.client, quotas: informer.Lister(), clock: clock.RealClock{}}
	u.monitors = newMonitors(ctx, c.cfg.Registry, c.cfg.Store, u.namespaceChanged, u.queueAll)
	defer u.monitors.stop()
	u.evaluators = generic.NewRegistry(append(objectCountEvaluators(u.count), servicesEvaluator{list: u.listServices}))
	u.ctrl = reconcile.New("resourcequota", reconcile.Func[types.NamespacedName](u.reconcile),
		reconcile.Options[types.NamespacedName]{Workers: defaultWorkers, Metrics: c.cfg.ReconcileMetrics})
	if _, err := informer.Informer().AddEventHandler(u.quotaEvents()); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot follow the resource quotas")
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	// A resource served or withdrawn (a CRD) starts or stops a monitor: every quota
	// is looked at again.
	defer c.cfg.Registry.OnChange(ctx, u.queueAll)()
	_ = u.ctrl.Run(ctx)
}

// queueAll queues every quota.
func (u *usage) queueAll() { u.queue(u.quotas.List(labels.Everything())) }

// namespaceChanged queues every quota of namespace: an object it may count is gone.
func (u *usage) namespaceChanged(namespace string) {
	u.queue(u.quotas.ResourceQuotas(namespace).List(labels.Everything()))
}

// queue queues the quotas a lister listed (a lister's List fails only on a bad
// selector).
func (u *usage) queue(quotas []*corev1.ResourceQuota, _ error) {
	for _, rq := range quotas {
		u.ctrl.Add(types.NamespacedName{Namespace: rq.Namespace, Name: rq.Name})
	}
}

// count returns the number of objects of gr in namespace, read from etcd (a
// count-only range read: exact as of now, where an informer's cache may not yet
// hold an object admission has just charged for), and makes sure gr's monitor
// reports its deletions. A resource not served has no objects.
func (u *usage) count(gr schema.GroupResource, namespace string) (int64, error) {
	if err := u.monitors.ensure(gr); err != nil {
		return 0, err
	}
	res := u.cfg.Registry.Get(gr)
	if res == nil {
		return 0, nil
	}
	return u.cfg.Store.Storage().Count(u.ctx, res.Prefix(namespace))
}

// listServices lists the Services of namespace through the API (a consistent read),
// and makes sure their monitor reports their deletions.
func (u *usage) listServices(namespace string) ([]runtime.Object, error) {
	if err := u.monitors.ensure(servicesGR); err != nil {
		return nil, err
	}
	list, err := u.client.CoreV1().Services(namespace).List(u.ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // not served
	}
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// reconcile recalculates one quota's status and writes it if it changed. The quota is
// read afresh, not from the informer: the informer may not hold yet a charge that
// admission has just written, and a recount compared with that stale usage would
// wrongly find nothing to write (a deletion's recount, lost until the next resync).
func (u *usage) reconcile(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	rq, err := u.client.CoreV1().ResourceQuotas(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	u.addEvaluators(rq.Spec.Hard)
	calculated, err := quota.CalculateUsage(rq.Namespace, rq.Spec.Scopes, rq.Spec.Hard, u.evaluators, rq.Spec.ScopeSelector)
	if err != nil {
		return reconcile.Result{}, err
	}
	// Usage of resources no evaluator knows (a pod's cpu) is kept as it was.
	used := quota.Add(corev1.ResourceList{}, rq.Status.Used)
	for name, q := range calculated {
		used[name] = q
	}
	used = quota.Mask(used, quota.ResourceNames(rq.Spec.Hard))
	if quota.Equals(rq.Status.Hard, rq.Spec.Hard) && quota.Equals(rq.Status.Used, used) {
		u.settled(key, true) // a give-back awaited, if any, is moot
		return reconcile.Result{RequeueAfter: u.cfg.ResyncPeriod}, nil
	}
	kept, _ := quota.LessThanOrEqual(rq.Status.Used, used)
	if !u.settled(key, kept) {
		// A recount that gives usage back may have been made while a write admission
		// charged for was still on its way to etcd (any change can queue the quota
		// then: a deletion, a newly served resource); written, it would let another
		// write in over the quota. It is written only once a recount a while later
		// agrees.
		return reconcile.Result{RequeueAfter: givenBackRecount}, nil
	}
	next := rq.DeepCopy()
	next.Status = corev1.ResourceQuotaStatus{Hard: quota.Add(corev1.ResourceList{}, rq.Spec.Hard), Used: used}
	if _, err := u.client.CoreV1().ResourceQuotas(rq.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: u.cfg.ResyncPeriod}, nil
}

// settled reports whether the recount of quota key may be written: at once when it
// keeps every usage (kept), else once an earlier recount, at least givenBackRecount
// ago, gave usage back too.
func (u *usage) settled(key types.NamespacedName, kept bool) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if kept {
		delete(u.givenBack, key)
		return true
	}
	first, ok := u.givenBack[key]
	if !ok {
		if u.givenBack == nil {
			u.givenBack = map[types.NamespacedName]time.Time{}
		}
		u.givenBack[key] = u.clock.Now()
		return false
	}
	if u.clock.Since(first) < givenBackRecount {
		return false
	}
	delete(u.givenBack, key)
	return true
}

// addEvaluators registers an object-count evaluator for every resource hard counts
// that has none yet.
func (u *usage) addEvaluators(hard corev1.ResourceList) {
	for name := range hard {
		gr, ok := countedResource(name)
		if !ok || u.evaluators.Get(gr) != nil {
			continue
		}
		if _, ignored := IgnoredResources[gr]; ignored {
			continue
		}
		u.evaluators.Add(countedBy(generic.NewObjectCountEvaluator(gr, nil, ""), u.count))
	}
}

// quotaEvents queues a quota when it is created, when its spec changes, and when its
// status.hard no longer mirrors spec.hard. Changes of status.used alone are not
// followed: admission charges a write before the object is stored, so a
// recalculation right then would give the charge back.
func (u *usage) quotaEvents() cache.ResourceEventHandler {
	key := func(rq *corev1.ResourceQuota) types.NamespacedName {
		return types.NamespacedName{Namespace: rq.Namespace, Name: rq.Name}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if rq, ok := obj.(*corev1.ResourceQuota); ok {
				u.ctrl.Add(key(rq))
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			old, ok1 := oldObj.(*corev1.ResourceQuota)
			rq, ok2 := newObj.(*corev1.ResourceQuota)
			if !ok1 || !ok2 {
				return
			}
			if !apiequality.Semantic.DeepEqual(old.Spec, rq.Spec) || !quota.Equals(rq.Status.Hard, rq.Spec.Hard) {
				u.ctrl.Add(key(rq))
			}
		},
	}
}
