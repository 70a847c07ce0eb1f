package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// errContentRemains requeues a namespace whose content is still being deleted
// (objects with finalizers of their own).
var errContentRemains = errors.New("namespace still has content")

// backoff spaces the passes over a namespace whose content stays (or whose pass
// failed): from 100 ms, doubling, to 8 s. Content held by finalizers is looked at
// again no later than Kubernetes' namespace controller does (after half its 15 s
// estimate and a second), however long it has been held; client-go's default would
// reach minutes.
var backoff = reconcile.Backoff{Base: 100 * time.Millisecond, Max: 8 * time.Second}

// podsResource is core/v1 pods, the content of a namespace deleted first.
var podsResource = schema.GroupResource{Resource: "pods"}

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
	c.ctrl = reconcile.New("namespace", reconcile.Func[string](c.reconcile), reconcile.Options[string]{Workers: 2, Backoff: backoff, Metrics: metrics})
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

// finalize empties namespace name, if it is terminating, records what holds it
// back in its deletion conditions, and completes its deletion once it is empty.
func (c *Controller) finalize(ctx context.Context, name string) error {
	nsRes := c.reg.Get(GroupResource)
	if nsRes == nil {
		return fmt.Errorf("%w: %s", store.ErrNotServed, GroupResource)
	}
	ref := store.Ref{Resource: nsRes, Version: "v1", Name: name}
	ns, err := c.store.Get(ctx, ref, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.GetDeletionTimestamp() == nil || !slices.Contains(specFinalizers(ns), FinalizerKubernetes) {
		return nil
	}
	p := c.empty(ctx, name)
	if err := c.writeConditions(ctx, ref, ns.GetUID(), p); err != nil {
		return err
	}
	if len(p.failures) > 0 {
		return fmt.Errorf("emptying namespace %s: %w", name, errors.Join(p.failures...))
	}
	if n := p.contentLeft(); n > 0 {
		return fmt.Errorf("%w: %d objects", errContentRemains, n)
	}
	_, _, err = c.store.Update(ctx, ref, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
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

// empty makes one pass over the content of namespace ns, as Kubernetes' namespace
// controller does: its pods first, and everything else only once no pod is left, so
// that nothing a running pod uses (its claims, secrets, network policies) goes before
// it.
func (c *Controller) empty(ctx context.Context, ns string) *pass {
	p := newPass()
	if pods := c.reg.Get(podsResource); pods != nil && pods.Namespaced && pods.StoresOwn() {
		c.deleteAll(ctx, pods, ns, p)
		if p.contentLeft() > 0 || len(p.failures) > 0 {
			return p
		}
	}
	for _, res := range c.reg.Resources() {
		if !res.Namespaced || !res.StoresOwn() || res.GroupResource() == podsResource { // a shared resource's objects go with its owner's
			continue
		}
		c.deleteAll(ctx, res, ns, p)
	}
	return p
}

// writeConditions sets the deletion conditions of namespace ref (of uid) from p,
// through its status subresource; a pass that changes none writes nothing.
func (c *Controller) writeConditions(ctx context.Context, ref store.Ref, uid types.UID, p *pass) error {
	_, _, err := c.store.Update(ctx, ref, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		raw, _, err := unstructured.NestedMap(cur.Object, "status")
		if err != nil {
			return nil, err
		}
		var status corev1.NamespaceStatus
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
			return nil, err
		}
		status.Conditions, _ = p.apply(status.Conditions, metav1.Now())
		out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
		if err != nil {
			return nil, err
		}
		cur.Object["status"] = out
		return cur, nil
	}, store.UpdateOptions{WriteOptions: store.WriteOptions{Subresource: "status"}, Preconditions: &metav1.Preconditions{UID: ptr.To(uid)}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteAll deletes every object of res in namespace ns, in the background as
// Kubernetes' namespace controller does (the garbage collector deletes their
// dependents afterwards), and records in p those that stay (held by finalizers, or
// deleted gracefully) and a failure to list or delete them.
func (c *Controller) deleteAll(ctx context.Context, res *registry.Resource, ns string, p *pass) {
	background := metav1.DeletePropagationBackground
	version := res.StorageVersion
	if v := res.PreferredVersion(); v != "" {
		version = v
	}
	gr := res.GroupResource()
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := c.store.List(ctx, store.Ref{Resource: res, Version: version, Namespace: ns}, opts)
		if err != nil {
			p.failures = append(p.failures, fmt.Errorf("listing %s: %w", gr, err))
			return
		}
		for i := range list.Items {
			item := &list.Items[i]
			obj, deleted, err := c.store.Delete(ctx, store.Ref{Resource: res, Version: version, Namespace: ns, Name: item.GetName()}, store.DeleteOptions{Propagation: &background})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				p.failures = append(p.failures, fmt.Errorf("deleting %s %s: %w", gr, item.GetName(), err))
				return
			case !deleted:
				var finalizers []string
				if obj != nil {
					finalizers = obj.GetFinalizers()
				}
				p.left(gr, finalizers)
			}
		}
		if list.GetContinue() == "" {
			return
		}
		opts.Continue = list.GetContinue()
	}
}
