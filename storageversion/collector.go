package storageversion

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// emptyGrace is how long an object without entries is left alone: a server creates an
// object, then writes its entry, in two steps.
const emptyGrace = 5 * time.Second

// CollectorConfig configures a Collector.
type CollectorConfig struct {
	// Registry and Store are the server's.
	Registry *registry.Registry
	Store    *store.Store
	// Election elects the server whose collector collects (the server's election of
	// its controllers). Its lease must be shorter than the servers' identity leases,
	// so that a new leader is in place before a dead leader's identity lease expires.
	Election reconcile.Elector
	// Metrics registers the collector's metric (nil: none).
	Metrics prometheus.Registerer
	// ReconcileMetrics receives the reconcile runtime's samples (nil: none).
	ReconcileMetrics *reconcile.Metrics
}

// Collector is the garbage collector of storage versions and identity leases. Every
// server runs one; they elect a leader, which alone collects:
//
//   - the entries of servers without a live identity lease (gone or expired), with a
//     live read of the lease before each removal so that a lagging cache never
//     condemns a live server;
//   - the StorageVersion objects left without entries, or whose
//     CustomResourceDefinition is gone;
//   - expired identity leases.
//
// It follows leases and StorageVersions (watches, and a timer at the next lease
// expiry), so a dead server's entries go as soon as its lease expires. It decides from
// those caches and reads storage only for what they condemn, so that a new leader's
// first pass over every object is quick even with leadership changing. Every update and
// delete is preconditioned on the uid and resourceVersion it was computed from: a
// server registering concurrently makes the write fail and be recomputed, never erased.
// The StorageVersion part runs only while the server serves storageversions.
type Collector struct {
	cfg       CollectorConfig
	objs      *objects
	collected *prometheus.CounterVec
}

// NewCollector returns the collector of a server; Run collects while the server leads.
func NewCollector(cfg CollectorConfig) (*Collector, error) {
	if cfg.Registry == nil || cfg.Store == nil || cfg.Election == nil {
		return nil, errors.New("storageversion: the collector needs Registry, Store and Election")
	}
	return &Collector{
		cfg:       cfg,
		objs:      &objects{reg: cfg.Registry, store: cfg.Store, now: time.Now},
		collected: newCollectedMetric(cfg.Metrics),
	}, nil
}

// Run collects while the server leads its election, until ctx is done.
func (c *Collector) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("storage-version-gc")
	ctx = klog.NewContext(ctx, logger)
	return c.cfg.Election.RunElected(ctx, c.lead)
}

// lead collects until ctx is done (leadership lost), with two controllers of the
// reconcile runtime: one per identity lease (an expired lease is deleted; a live one
// is looked at again when it would expire, a change no watch reports), one per
// StorageVersion (the entries of servers without a live lease are removed). A lease
// that goes queues every StorageVersion.
func (c *Collector) lead(ctx context.Context) {
	logger := klog.FromContext(ctx)
	// Every lease of kube-system: servers' and controller managers' identity leases
	// are told apart by their labels (a label selector cannot say "either").
	leases := c.cfg.Store.NewInformer(store.Source{Registry: c.cfg.Registry, Resource: identity.GroupResource, Version: "v1",
		Namespace: identity.Namespace}, nil)
	backoff := reconcile.Backoff{Base: 100 * time.Millisecond, Max: 10 * time.Second}
	leaseGC := reconcile.New("identity-lease-gc", reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		return c.collectLease(ctx, key, leases)
	}), reconcile.Options[string]{Backoff: backoff, Metrics: c.cfg.ReconcileMetrics})
	informers := []cache.SharedIndexInformer{leases}
	err := leaseGC.Watch(leases, func(u *unstructured.Unstructured) []string {
		if !identity.IsComponentLease(u) {
			return nil // an election lease: not the collector's
		}
		return []string{identity.Namespace + "/" + u.GetName()}
	})
	var objectGC *reconcile.Controller[string]
	if err == nil && c.cfg.Registry.Get(GroupResource) != nil {
		svs := c.cfg.Store.NewInformer(store.Source{Registry: c.cfg.Registry, Resource: GroupResource, Version: version}, nil)
		informers = append(informers, svs)
		objectGC = reconcile.New("storage-version-gc", reconcile.Func[string](func(ctx context.Context, name string) (reconcile.Result, error) {
			return c.collectObject(ctx, name, svs, leases)
		}), reconcile.Options[string]{Backoff: backoff, Metrics: c.cfg.ReconcileMetrics})
		if err = objectGC.Watch(svs, reconcile.ByName); err == nil {
			var reg cache.ResourceEventHandlerRegistration
			reg, err = leases.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj interface{}) {
				if u, ok := obj.(*unstructured.Unstructured); ok && !identity.IsIdentityLease(u) {
					return // not a server's: its entries are not concerned
				}
				for _, name := range svs.GetStore().ListKeys() {
					objectGC.Add(name)
				}
			}})
			if err == nil {
				objectGC.WaitFor(reg.HasSynced) // it decides from the lease cache too
			}
		}
	}
	if err != nil {
		logger.Error(err, "Cannot follow identity leases and StorageVersions")
		return
	}
	defer reconcile.StartInformers(ctx, informers...)()
	var wg sync.WaitGroup
	if objectGC != nil {
		wg.Go(func() { _ = objectGC.Run(ctx) })
	}
	wg.Go(func() { _ = leaseGC.Run(ctx) })
	wg.Wait()
}

// aliveInCache reports whether the lease cache holds a live identity lease of server
// id. A false answer is only a hint: alive reads storage before anything is removed.
func aliveInCache(id string, leases cache.SharedIndexInformer, now time.Time) bool {
	obj, ok, _ := leases.GetStore().GetByKey(identity.Namespace + "/" + id)
	if !ok {
		return false
	}
	u, ok := obj.(*unstructured.Unstructured)
	return ok && identity.IsIdentityLease(u) && !identity.Expired(u, now)
}

// alive reports whether server id has a live identity lease. The cache answers for
// live leases; an absent or expired one is read again from storage, so that a lease
// just created or renewed is never missed.
func (c *Collector) alive(ctx context.Context, id string, leases cache.SharedIndexInformer) (bool, error) {
	if aliveInCache(id, leases, time.Now()) {
		return true, nil
	}
	res := c.cfg.Registry.Get(identity.GroupResource)
	if res == nil {
		return false, identity.ErrLeasesNotServed
	}
	u, err := c.cfg.Store.Get(ctx, store.Ref{Resource: res, Version: "v1", Namespace: identity.Namespace, Name: id}, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return identity.IsIdentityLease(u) && !identity.Expired(u, time.Now()), nil
}

// collectObject removes from one StorageVersion the entries of servers without a live
// lease, and deletes it when it is left without entries or its
// CustomResourceDefinition is gone. It decides from the caches and goes to storage
// only for what they condemn: a new leader's first pass over every object costs a
// read per object owned by a definition, not a read-modify-write per object, so that
// it ends in moments even when leadership changes often. Every write is
// preconditioned on what it was computed from; a stale cache makes it conflict and
// the object is looked at again.
func (c *Collector) collectObject(ctx context.Context, name string, svs, leases cache.SharedIndexInformer) (reconcile.Result, error) {
	item, ok, err := svs.GetStore().GetByKey(name)
	if err != nil || !ok {
		return reconcile.Result{}, err // gone: nothing to collect
	}
	obj, isObj := item.(*unstructured.Unstructured)
	if !isObj {
		return reconcile.Result{}, nil
	}
	sv, err := fromUnstructured(obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := time.Now()
	for _, e := range sv.Status.StorageVersions {
		if aliveInCache(e.APIServerID, leases, now) {
			continue
		}
		if changed, err := c.removeDead(ctx, name, leases); err != nil || changed {
			return reconcile.Result{}, err // the change comes back through the informer
		}
		break // storage knows the lease live: the cache lags
	}
	if gone, err := c.objs.ownerGone(ctx, obj); err != nil {
		return reconcile.Result{}, err
	} else if gone {
		if err := c.objs.delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		c.collected.WithLabelValues("object").Inc()
		klog.FromContext(ctx).Info("Deleted the StorageVersion of a CustomResourceDefinition that is gone", "storageVersion", name)
		return reconcile.Result{}, nil
	}
	if len(sv.Status.StorageVersions) > 0 {
		return reconcile.Result{}, nil
	}
	if age := now.Sub(obj.GetCreationTimestamp().Time); age < emptyGrace {
		return reconcile.Result{RequeueAfter: emptyGrace - age + time.Second}, nil
	}
	if err := c.objs.delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	c.collected.WithLabelValues("object").Inc()
	klog.FromContext(ctx).Info("Deleted a StorageVersion without entries", "storageVersion", name)
	return reconcile.Result{}, nil
}

// removeDead removes from the named object, as stored, the entries of servers whose
// identity lease storage confirms gone or expired (deleting the object if none is
// left), and reports whether it changed anything.
func (c *Collector) removeDead(ctx context.Context, name string, leases cache.SharedIndexInformer) (bool, error) {
	verdicts := map[string]bool{} // id → dead, decided once per pass
	dead := func(id string) (bool, error) {
		if d, ok := verdicts[id]; ok {
			return d, nil
		}
		a, err := c.alive(ctx, id, leases)
		if err != nil {
			return false, err
		}
		verdicts[id] = !a
		return !a, nil
	}
	removed, deleted, err := c.objs.removeEntries(ctx, name, dead)
	if err != nil {
		return false, err
	}
	if removed > 0 {
		c.collected.WithLabelValues("entry").Add(float64(removed))
		klog.FromContext(ctx).Info("Removed the storage version entries of servers without a live identity lease", "storageVersion", name, "entries", removed, "objectDeleted", deleted)
	}
	if deleted {
		c.collected.WithLabelValues("object").Inc()
	}
	return removed > 0 || deleted, nil
}

// collectLease deletes the identity lease key ("namespace/name") if it has expired,
// after a fresh read; a live lease is looked at again when it would expire.
func (c *Collector) collectLease(ctx context.Context, key string, leases cache.SharedIndexInformer) (reconcile.Result, error) {
	obj, exists, err := leases.GetStore().GetByKey(key)
	if err != nil || !exists {
		return reconcile.Result{}, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !identity.IsComponentLease(u) {
		return reconcile.Result{}, nil
	}
	if at, ok := identity.ExpiresAt(u); ok && time.Now().Before(at) {
		return reconcile.Result{RequeueAfter: time.Until(at) + 10*time.Millisecond}, nil
	}
	res := c.cfg.Registry.Get(identity.GroupResource)
	if res == nil {
		return reconcile.Result{}, identity.ErrLeasesNotServed
	}
	ref := store.Ref{Resource: res, Version: "v1", Namespace: identity.Namespace, Name: u.GetName()}
	cur, err := c.cfg.Store.Get(ctx, ref, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if !identity.IsComponentLease(cur) || !identity.Expired(cur, time.Now()) {
		return reconcile.Result{}, nil // renewed meanwhile: the informer brings the change
	}
	uid, rv := cur.GetUID(), cur.GetResourceVersion()
	_, _, err = c.cfg.Store.Delete(ctx, ref, store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	switch {
	case err == nil:
		c.collected.WithLabelValues("lease").Inc()
		holder, _, _ := unstructured.NestedString(cur.Object, "spec", "holderIdentity")
		klog.FromContext(ctx).Info("Deleted an expired identity lease", "lease", cur.GetName(), "holder", holder)
		return reconcile.Result{}, nil
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err // a conflict: renewed meanwhile, looked at again
}
