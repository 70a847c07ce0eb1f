package namespace

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// errContentRemains requeues a namespace whose content is still being deleted
// (objects with finalizers of their own).
var errContentRemains = fmt.Errorf("namespace still has content")

// Controller empties terminating namespaces and then completes their deletion. It is
// level-based: every namespace it sees with a deletionTimestamp is reconciled until it
// is gone, so running it in several servers at once is safe (the writes are
// idempotent and preconditioned).
type Controller struct {
	reg   *registry.Registry
	store *store.Store
	queue workqueue.TypedRateLimitingInterface[string]
}

// NewController returns a controller over the resources of reg stored in store.
func NewController(reg *registry.Registry, st *store.Store) *Controller {
	return &Controller{
		reg:   reg,
		store: st,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace"}),
	}
}

// Run watches namespaces and reconciles terminating ones with workers goroutines until
// ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	logger := klog.FromContext(ctx).WithName("namespace-controller")
	ctx = klog.NewContext(ctx, logger)
	defer c.queue.ShutDown()
	for i := 0; i < workers; i++ {
		go func() {
			for c.processNext(ctx) {
			}
		}()
	}
	for ctx.Err() == nil {
		if err := c.watch(ctx); err != nil && ctx.Err() == nil {
			logger.V(2).Info("Namespace watch restarting", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (c *Controller) watch(ctx context.Context) error {
	res := c.reg.Get(namespacesGR)
	if res == nil {
		return fmt.Errorf("namespaces are not registered")
	}
	w, err := c.store.Watch(ctx, store.Ref{Resource: res, Version: "v1"}, metav1.ListOptions{})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && u.GetDeletionTimestamp() != nil {
				c.queue.Add(u.GetName())
			}
		case watch.Error:
			return apierrors.FromObject(ev.Object)
		}
	}
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.reconcile(ctx, name); err != nil {
		klog.FromContext(ctx).V(4).Info("Namespace not finished", "namespace", name, "err", err)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// reconcile deletes everything in a terminating namespace, then removes the
// kubernetes finalizer, which completes the deletion.
func (c *Controller) reconcile(ctx context.Context, name string) error {
	nsRes := c.reg.Get(namespacesGR)
	if nsRes == nil {
		return fmt.Errorf("namespaces are not registered")
	}
	ns, err := c.store.Get(ctx, store.Ref{Resource: nsRes, Version: "v1", Name: name}, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.GetDeletionTimestamp() == nil || !slices.Contains(specFinalizers(ns), FinalizerKubernetes) {
		return nil
	}
	remaining := 0
	for _, res := range c.reg.Resources() {
		if !res.Namespaced {
			continue
		}
		n, err := c.deleteAll(ctx, res, name)
		if err != nil {
			return fmt.Errorf("deleting %s in %s: %w", res.GroupResource(), name, err)
		}
		remaining += n
	}
	if remaining > 0 {
		return fmt.Errorf("%w: %d objects", errContentRemains, remaining)
	}
	_, _, err = c.store.Update(ctx, store.Ref{Resource: nsRes, Version: "v1", Name: name}, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		fins := slices.DeleteFunc(specFinalizers(cur), func(f string) bool { return f == FinalizerKubernetes })
		if err := unstructured.SetNestedStringSlice(cur.Object, fins, "spec", "finalizers"); err != nil {
			return nil, err
		}
		return cur, nil
	}, store.UpdateOptions{Preconditions: &metav1.Preconditions{UID: ptr(ns.GetUID())}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Namespace emptied and finalized", "namespace", name)
	}
	return err
}

// deleteAll deletes every object of res in namespace ns and returns how many remain
// (held by finalizers).
func (c *Controller) deleteAll(ctx context.Context, res *registry.Resource, ns string) (int, error) {
	version := res.StorageVersion
	if v := res.PreferredVersion(); v != "" {
		version = v
	}
	remaining := 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := c.store.List(ctx, store.Ref{Resource: res, Version: version, Namespace: ns}, opts)
		if err != nil {
			return 0, err
		}
		for i := range list.Items {
			item := &list.Items[i]
			_, deleted, err := c.store.Delete(ctx, store.Ref{Resource: res, Version: version, Namespace: ns, Name: item.GetName()}, store.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return 0, err
			}
			if !deleted {
				remaining++
			}
		}
		if list.GetContinue() == "" {
			return remaining, nil
		}
		opts.Continue = list.GetContinue()
	}
}

func ptr[T any](v T) *T { return &v }
