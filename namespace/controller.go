package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// errContentRemains requeues a namespace whose content is still being deleted
// (objects with finalizers of their own).
var errContentRemains = errors.New("namespace still has content")

// Controller empties terminating namespaces and then completes their deletion. It is
// level-based: every namespace it sees with a deletionTimestamp is reconciled until it
// is gone, so running it in several servers at once is safe (the writes are
// idempotent and preconditioned).
type Controller struct {
	reg      *registry.Registry
	store    *store.Store
	informer cache.SharedIndexInformer
	ctrl     *reconcile.Controller[string]
}

// NewController returns a controller over the resources of reg stored in st.
func NewController(reg *registry.Registry, st *store.Store, metrics *reconcile.Metrics) (*Controller, error) {
	c := &Controller{
		reg:      reg,
		store:    st,
		informer: st.NewInformer(store.Source{Registry: reg, Resource: GroupResource, Version: "v1"}, nil),
	}
	c.ctrl = reconcile.New("namespace", reconcile.Func[string](c.reconcile), reconcile.Options[string]{Workers: 2, Metrics: metrics})
	err := c.ctrl.Watch(c.informer, func(ns *unstructured.Unstructured) []string {
		if ns.GetDeletionTimestamp() == nil {
			return nil
		}
		return []string{ns.GetName()}
	})
	return c, err
}

// Run follows namespaces and empties terminating ones until ctx is done, and returns
// once its workers and informer have stopped.
func (c *Controller) Run(ctx context.Context) error {
	defer reconcile.StartInformers(ctx, c.informer)()
	return c.ctrl.Run(ctx)
}

// reconcile deletes everything in a terminating namespace, then removes the
// kubernetes finalizer, which completes the deletion.
func (c *Controller) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	return reconcile.Result{}, c.finalize(ctx, name)
}

// finalize empties namespace name, if it is terminating, and completes its deletion.
func (c *Controller) finalize(ctx context.Context, name string) error {
	nsRes := c.reg.Get(GroupResource)
	if nsRes == nil {
		return fmt.Errorf("%w: %s", store.ErrNotServed, GroupResource)
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
		if !res.Namespaced || !res.StoresOwn() { // a shared resource's objects go with its owner's
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
	}, store.UpdateOptions{WriteOptions: store.WriteOptions{Subresource: Finalize}, Preconditions: &metav1.Preconditions{UID: ptr.To(ns.GetUID())}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Namespace emptied and finalized", "namespace", name)
	}
	return err
}

// deleteAll deletes every object of res in namespace ns, in the background as
// Kubernetes' namespace controller does (the garbage collector deletes their
// dependents afterwards), and returns how many remain (held by finalizers).
func (c *Controller) deleteAll(ctx context.Context, res *registry.Resource, ns string) (int, error) {
	background := metav1.DeletePropagationBackground
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
			_, deleted, err := c.store.Delete(ctx, store.Ref{Resource: res, Version: version, Namespace: ns, Name: item.GetName()}, store.DeleteOptions{Propagation: &background})
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
