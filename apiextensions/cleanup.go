package apiextensions

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// retryAfter is how soon a definition whose cleanup waits on custom resources held by
// their own finalizers is looked at again.
const retryAfter = time.Second

// cleanup deletes every custom resource of crd, which is being deleted, and then
// removes the cleanup finalizer, which completes the deletion. Its progress shows in
// the Terminating condition. Every step is idempotent: several servers may run it at
// once.
func (c *Controller) cleanup(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (reconcile.Result, error) {
	if !slices.Contains(crd.Finalizers, FinalizerCleanup) {
		return reconcile.Result{}, nil
	}
	res, err := c.instancesResource(ctx, crd)
	if err != nil {
		return reconcile.Result{}, err
	}
	if cond := apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating); cond == nil || cond.Reason == reasonDeletionPending {
		if crd, err = c.setTerminating(ctx, crd, reasonDeletionInProgress, "CustomResource deletion is in progress"); err != nil {
			return reconcile.Result{}, err
		}
	}
	remaining, err := c.deleteInstances(ctx, res)
	if err != nil {
		msg := fmt.Sprintf("could not delete all instances: %v", err)
		if _, serr := c.setTerminating(ctx, crd, reasonDeletionFailed, msg); serr != nil {
			klog.FromContext(ctx).V(2).Info("Cannot report the cleanup failure", "crd", crd.Name, "err", serr)
		}
		return reconcile.Result{}, err
	}
	if remaining > 0 {
		if !isTerminating(crd, reasonDeletionCheck) {
			if _, err := c.setTerminating(ctx, crd, reasonDeletionCheck, "some instances are still being deleted"); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{RequeueAfter: retryAfter}, nil
	}
	return reconcile.Result{}, c.removeFinalizer(ctx, crd)
}

// instancesResource returns the resource to read and delete crd's custom resources
// with: the one served, or, for a definition that was never established (its objects
// may remain from an earlier definition of the same name), one built for the cleanup.
func (c *Controller) instancesResource(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (*registry.Resource, error) {
	gr := schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
	if res := c.reg.Get(gr); res != nil && res.Owner != nil && res.Owner.UID == string(crd.UID) {
		return res, nil
	}
	names := crd.Status.AcceptedNames
	if names.Kind == "" {
		names = crd.Spec.Names
	}
	res, err := definition(crd, names)
	if err != nil {
		return nil, err
	}
	if err := res.Prepare(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

func isTerminating(crd *apiextensionsv1.CustomResourceDefinition, reason string) bool {
	cond := apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating)
	return cond != nil && cond.Status == apiextensionsv1.ConditionTrue && cond.Reason == reason
}

// setTerminating records the cleanup's progress in the Terminating condition.
func (c *Controller) setTerminating(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, reason, msg string) (*apiextensionsv1.CustomResourceDefinition, error) {
	want := crd.DeepCopy()
	apihelpers.SetCRDCondition(want, terminatingCondition(reason, msg))
	if !statusChanged(crd, want) {
		return crd, nil
	}
	return c.writeStatus(ctx, crd, want)
}

// deleteInstances deletes every object of res, in every namespace, and returns how
// many are still there, held by finalizers.
func (c *Controller) deleteInstances(ctx context.Context, res *registry.Resource) (int, error) {
	version := res.StorageVersion
	remaining := 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := c.store.List(ctx, store.Ref{Resource: res, Version: version}, opts)
		if err != nil {
			return 0, fmt.Errorf("listing %s: %w", res.GroupResource(), err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			_, deleted, err := c.store.Delete(ctx, store.Ref{Resource: res, Version: version, Namespace: item.GetNamespace(), Name: item.GetName()}, store.DeleteOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return 0, fmt.Errorf("deleting %s %s: %w", res.GroupResource(), klog.KObj(item), err)
			case !deleted:
				remaining++
			}
		}
		if list.GetContinue() == "" {
			return remaining, nil
		}
		opts.Continue = list.GetContinue()
	}
}

// removeFinalizer removes the cleanup finalizer from crd (if it is still the same
// object), which deletes it when no other finalizer holds it.
func (c *Controller) removeFinalizer(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	res := c.reg.Get(GroupResource)
	if res == nil {
		return fmt.Errorf("%w: %s", store.ErrNotServed, GroupResource)
	}
	uid := crd.UID
	_, _, err := c.store.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: crd.Name}, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetFinalizers(slices.DeleteFunc(cur.GetFinalizers(), func(f string) bool { return f == FinalizerCleanup }))
		return cur, nil
	}, store.UpdateOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).V(2).Info("CustomResourceDefinition cleaned up", "crd", crd.Name)
	}
	return err
}
