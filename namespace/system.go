package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SystemNamespaces are the namespaces every Kubernetes cluster has, which the system
// namespaces controller keeps existing.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// Immortal are the system namespaces that may not be deleted (403), as Kubernetes'
// NamespaceLifecycle admission refuses it.
var Immortal = []string{"default", "kube-system", "kube-public"}

// errImmortal is why an immortal namespace is not deleted (Kubernetes' words).
var errImmortal = errors.New("this namespace may not be deleted")

// ErrSystemNotSynced means the system namespaces controller has not created the system
// namespaces yet.
var ErrSystemNotSynced = errors.New("the system namespaces have not been created yet")

// SystemNamespacesHook names the controller's post-start hook, kube-apiserver's.
const SystemNamespacesHook = "start-system-namespaces-controller"

// systemInterval is how often every system namespace is checked again, as
// kube-apiserver's system namespaces controller does (besides every change).
const systemInterval = time.Minute

// SystemController keeps the system namespaces existing: it creates those missing at
// start (Ready once done), again whenever one is deleted (kube-node-lease may be; once
// a terminating one is gone) and every minute. Every server runs one; creations that
// race end in AlreadyExists, which is success.
type SystemController struct {
	reg      *registry.Registry
	store    *store.Store
	informer cache.SharedIndexInformer
	ctrl     *reconcile.Controller[string]
	synced   atomic.Bool
}

// NewSystemController returns the system namespaces controller over namespaces
// stored in st.
func NewSystemController(reg *registry.Registry, st *store.Store, metrics *reconcile.Metrics) (*SystemController, error) {
	c := &SystemController{reg: reg, store: st,
		informer: st.NewInformer(store.Source{Registry: reg, Resource: GroupResource, Version: "v1"}, nil)}
	c.ctrl = reconcile.New("system-namespaces", reconcile.Func[string](c.reconcile), reconcile.Options[string]{Metrics: metrics})
	err := c.ctrl.Watch(c.informer, func(ns *unstructured.Unstructured) []string {
		if slices.Contains(SystemNamespaces, ns.GetName()) {
			return []string{ns.GetName()}
		}
		return nil
	})
	return c, err
}

// Ready reports nil once every system namespace has been created (or found).
func (c *SystemController) Ready() error {
	if !c.synced.Load() {
		return ErrSystemNotSynced
	}
	return nil
}

// Run creates the missing system namespaces, then keeps them until ctx is done.
func (c *SystemController) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("system-namespaces"))
	defer reconcile.StartInformers(ctx, c.informer)()
	if !c.ctrl.WaitForSync(ctx) {
		return nil
	}
	for _, name := range SystemNamespaces {
		c.ctrl.Add(name)
	}
	c.ctrl.Drain(ctx)
	c.synced.Store(true)
	return c.ctrl.Run(ctx)
}

// reconcile creates namespace name if it is missing, and looks again in a minute.
func (c *SystemController) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	_, exists, err := c.informer.GetStore().GetByKey(name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !exists {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
		obj.SetName(name)
		res := c.reg.Get(GroupResource)
		if res == nil {
			return reconcile.Result{}, fmt.Errorf("%w: %s", store.ErrNotServed, GroupResource)
		}
		_, err := c.store.Create(ctx, store.Ref{Resource: res, Version: "v1"}, obj, store.WriteOptions{})
		switch {
		case err == nil:
			klog.FromContext(ctx).V(2).Info("Created a system namespace", "namespace", name)
		case apierrors.IsAlreadyExists(err):
			// Created by another server meanwhile, or still terminating: its removal
			// queues it again.
		default:
			return reconcile.Result{}, fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return reconcile.Result{RequeueAfter: systemInterval}, nil
}
