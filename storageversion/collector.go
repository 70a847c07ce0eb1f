package storageversion

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// DefaultElectionLease is the Lease in kube-system the collector's leader election
// uses.
const DefaultElectionLease = "concord-storage-version-gc"

// emptyGrace is how long an object without entries is left alone: a server creates an
// object, then writes its entry, in two steps.
const emptyGrace = 5 * time.Second

// CollectorConfig configures a Collector.
type CollectorConfig struct {
	// Registry and Store are the server's.
	Registry *registry.Registry
	Store    *store.Store
	// Holder identifies this server in the election (its identity lease's holder
	// identity).
	Holder string
	// RESTConfig reaches this server as itself (its loopback configuration): the
	// election runs through client-go's leader election over a Lease.
	RESTConfig *rest.Config
	// LeaseDuration is the identity lease duration; the election's timings are derived
	// from it (half of it to take over from a leader that died), so that a new leader
	// is in place before a dead leader's identity lease expires.
	LeaseDuration time.Duration
	// ElectionLease names the election's Lease (default DefaultElectionLease).
	ElectionLease string
	// Metrics registers the collector's metric (nil: none).
	Metrics prometheus.Registerer
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
// expiry), so a dead server's entries go as soon as its lease expires. Every update and
// delete is preconditioned on the uid and resourceVersion it was computed from: a
// server registering concurrently makes the write fail and be recomputed, never erased.
// The StorageVersion part runs only while the server serves storageversions.
type Collector struct {
	cfg       CollectorConfig
	objs      *objects
	collected *prometheus.CounterVec
	client    kubernetes.Interface
	// httpClient carries the election's requests; its idle connections are closed when
	// Run returns.
	httpClient *http.Client
}

// NewCollector returns the collector of a server; Run campaigns and collects.
func NewCollector(cfg CollectorConfig) (*Collector, error) {
	if cfg.Registry == nil || cfg.Store == nil || cfg.RESTConfig == nil || cfg.Holder == "" {
		return nil, errors.New("storageversion: the collector needs Registry, Store, RESTConfig and Holder")
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = identity.DefaultLeaseDuration
	}
	if cfg.ElectionLease == "" {
		cfg.ElectionLease = DefaultElectionLease
	}
	// HTTP/1.1: a server shutting down closes idle HTTP/1.1 connections at once, where
	// it gives an HTTP/2 client a second to go away.
	restCfg := rest.CopyConfig(cfg.RESTConfig)
	restCfg.NextProtos = []string{"http/1.1"}
	httpClient, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return nil, fmt.Errorf("the collector's client: %w", err)
	}
	client, err := kubernetes.NewForConfigAndClient(restCfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("the collector's client: %w", err)
	}
	return &Collector{
		cfg:        cfg,
		objs:       &objects{reg: cfg.Registry, store: cfg.Store, now: time.Now},
		collected:  newCollectedMetric(cfg.Metrics),
		client:     client,
		httpClient: httpClient,
	}, nil
}

// electionTimings derives the leader election's lease duration, renew deadline and
// retry period from the identity lease duration d: half of d (whole seconds, at least
// one), two thirds of that, and a sixth of it.
func electionTimings(d time.Duration) (lease, renew, retry time.Duration) {
	lease = max(time.Second, (d / 2).Truncate(time.Second))
	return lease, lease * 2 / 3, lease / 6
}

// Run campaigns for leadership until ctx is done, collecting while it leads; when ctx
// is done it gives leadership up (so that a peer takes over at once) and returns.
func (c *Collector) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("storage-version-gc")
	ctx = klog.NewContext(ctx, logger)
	defer c.httpClient.CloseIdleConnections()
	lease, renew, retry := electionTimings(c.cfg.LeaseDuration)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: identity.Namespace, Name: c.cfg.ElectionLease},
		Client:     c.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.cfg.Holder},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   lease,
			RenewDeadline:   renew,
			RetryPeriod:     retry,
			ReleaseOnCancel: true,
			Name:            c.cfg.ElectionLease,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					logger.V(2).Info("Leading the storage version garbage collection")
					c.lead(ctx)
				},
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			logger.Error(err, "Cannot campaign for the garbage collection")
			return
		}
		le.Run(ctx)
	}
}

// Work items of the leader's queue: a StorageVersion by name, or leasesKey.
const leasesKey = "\x00leases"

// lead collects until ctx is done (leadership lost).
func (c *Collector) lead(ctx context.Context) {
	logger := klog.FromContext(ctx)
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 10*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "storage-version-gc"})
	defer queue.ShutDown()

	leases := cache.NewSharedIndexInformer(c.leaseListWatch(), &unstructured.Unstructured{}, 0, cache.Indexers{})
	var svs cache.SharedIndexInformer
	enqueueAll := func() {
		if svs != nil {
			for _, name := range svs.GetStore().ListKeys() {
				queue.Add(name)
			}
		}
		queue.Add(leasesKey)
	}
	if _, err := leases.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { queue.Add(leasesKey) },
		UpdateFunc: func(_, _ interface{}) { queue.Add(leasesKey) },
		DeleteFunc: func(interface{}) { enqueueAll() },
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		logger.Error(err, "Cannot follow identity leases")
		return
	}
	synced := []cache.InformerSynced{leases.HasSynced}
	if c.cfg.Registry.Get(GroupResource) != nil {
		svs = cache.NewSharedIndexInformer(listWatch(c.objs), &unstructured.Unstructured{}, 0, cache.Indexers{})
		key := func(obj interface{}) {
			if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				queue.Add(k)
			}
		}
		if _, err := svs.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
			AddFunc:    key,
			UpdateFunc: func(_, obj interface{}) { key(obj) },
		}, cache.HandlerOptions{Logger: &logger}); err != nil {
			logger.Error(err, "Cannot follow StorageVersions")
			return
		}
		go svs.RunWithContext(ctx)
		synced = append(synced, svs.HasSynced)
	}
	go leases.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	enqueueAll()

	// A timer at the next expiry of a live lease: expiry is a change no watch reports.
	wake := make(chan struct{}, 1)
	go func() {
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for {
			next := c.nextExpiry(leases)
			d := time.Hour
			if !next.IsZero() {
				d = max(time.Until(next)+10*time.Millisecond, 10*time.Millisecond)
			}
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-wake:
				if !timer.Stop() {
					select {
					case <-timer.C:
					default:
					}
				}
			case <-timer.C:
				enqueueAll()
			}
		}
	}()
	for {
		key, quit := queue.Get()
		if quit {
			return
		}
		var err error
		if key == leasesKey {
			err = c.collectLeases(ctx, leases)
			select {
			case wake <- struct{}{}:
			default:
			}
		} else {
			err = c.collectObject(ctx, key, leases, queue)
		}
		if err != nil && ctx.Err() == nil {
			logger.V(2).Info("Garbage collection failed, will retry", "item", key, "err", err)
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
		if ctx.Err() != nil {
			return
		}
	}
}

// leaseListWatch lists and watches the identity leases in kube-system.
func (c *Collector) leaseListWatch() *cache.ListWatch {
	selector := identity.LabelIdentity
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			res := c.cfg.Registry.Get(identity.GroupResource)
			if res == nil {
				return nil, identity.ErrLeasesNotServed
			}
			opts.LabelSelector = selector
			return c.cfg.Store.List(ctx, store.Ref{Resource: res, Version: "v1", Namespace: identity.Namespace}, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			res := c.cfg.Registry.Get(identity.GroupResource)
			if res == nil {
				return nil, identity.ErrLeasesNotServed
			}
			opts.LabelSelector = selector
			return c.cfg.Store.Watch(ctx, store.Ref{Resource: res, Version: "v1", Namespace: identity.Namespace}, opts)
		},
	}
}

// nextExpiry returns the earliest expiry of a live identity lease (zero if none).
func (c *Collector) nextExpiry(leases cache.SharedIndexInformer) time.Time {
	var next time.Time
	now := time.Now()
	for _, obj := range leases.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if at, ok := identity.ExpiresAt(u); ok && at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// alive reports whether server id has a live identity lease. The cache answers for
// live leases; an absent or expired one is read again from storage, so that a lease
// just created or renewed is never missed.
func (c *Collector) alive(ctx context.Context, id string, leases cache.SharedIndexInformer) (bool, error) {
	now := time.Now()
	if obj, ok, _ := leases.GetStore().GetByKey(identity.Namespace + "/" + id); ok {
		if u, ok := obj.(*unstructured.Unstructured); ok && identity.IsIdentityLease(u) && !identity.Expired(u, now) {
			return true, nil
		}
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
// CustomResourceDefinition is gone.
func (c *Collector) collectObject(ctx context.Context, name string, leases cache.SharedIndexInformer, queue workqueue.TypedRateLimitingInterface[string]) error {
	logger := klog.FromContext(ctx)
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
	removed, deleted, err := c.objs.removeEntries(ctx, name, dead, nil)
	if err != nil {
		return err
	}
	if removed > 0 {
		c.collected.WithLabelValues("entry").Add(float64(removed))
		logger.Info("Removed the storage version entries of servers without a live identity lease", "storageVersion", name, "entries", removed, "objectDeleted", deleted)
	}
	if deleted {
		c.collected.WithLabelValues("object").Inc()
		return nil
	}
	obj, sv, err := c.objs.get(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if gone, err := c.objs.ownerGone(ctx, obj); err != nil {
		return err
	} else if gone {
		if err := c.objs.delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		c.collected.WithLabelValues("object").Inc()
		logger.Info("Deleted the StorageVersion of a CustomResourceDefinition that is gone", "storageVersion", name)
		return nil
	}
	if len(sv.Status.StorageVersions) > 0 {
		return nil
	}
	if age := time.Since(obj.GetCreationTimestamp().Time); age < emptyGrace {
		queue.AddAfter(name, emptyGrace-age+time.Second)
		return nil
	}
	if err := c.objs.delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.collected.WithLabelValues("object").Inc()
	logger.Info("Deleted a StorageVersion without entries", "storageVersion", name)
	return nil
}

// collectLeases deletes the expired identity leases, each after a fresh read.
func (c *Collector) collectLeases(ctx context.Context, leases cache.SharedIndexInformer) error {
	res := c.cfg.Registry.Get(identity.GroupResource)
	if res == nil {
		return identity.ErrLeasesNotServed
	}
	var errs []error
	for _, obj := range leases.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || !identity.IsIdentityLease(u) || !identity.Expired(u, time.Now()) {
			continue
		}
		cur, err := c.cfg.Store.Get(ctx, store.Ref{Resource: res, Version: "v1", Namespace: identity.Namespace, Name: u.GetName()}, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !identity.IsIdentityLease(cur) || !identity.Expired(cur, time.Now()) {
			continue
		}
		uid, rv := cur.GetUID(), cur.GetResourceVersion()
		_, _, err = c.cfg.Store.Delete(ctx, store.Ref{Resource: res, Version: "v1", Namespace: identity.Namespace, Name: cur.GetName()}, store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		switch {
		case err == nil:
			c.collected.WithLabelValues("lease").Inc()
			holder, _, _ := unstructured.NestedString(cur.Object, "spec", "holderIdentity")
			klog.FromContext(ctx).Info("Deleted an expired identity lease", "lease", cur.GetName(), "holder", holder)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Renewed or deleted meanwhile: the next event decides again.
		default:
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
