package service

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/reconcile"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	networkingv1listers "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// DefaultCIDRHook names the default ServiceCIDR controller's post-start hook,
// kube-apiserver's.
const DefaultCIDRHook = "start-kubernetes-service-cidr-controller"

// errCIDRNotSynced: the default ServiceCIDR has not been created yet.
var errCIDRNotSynced = errors.New("the default ServiceCIDR has not been created yet")

// cidrInterval is how often the default ServiceCIDR is checked again besides its
// changes.
const cidrInterval = time.Minute

// DefaultCIDRController keeps the ServiceCIDR "kubernetes" of
// --service-cluster-ip-range, as kube-apiserver's controller does: created when
// missing (a single-stack one gains the second family when the flag has two), its
// Ready condition True while it matches the flag. Every server runs one.
type DefaultCIDRController struct {
	cidrs  []string
	client networkingv1client.ServiceCIDRsGetter
	lister networkingv1listers.ServiceCIDRLister
	ctrl   *reconcile.Controller[string]
	synced atomic.Bool
}

// NewDefaultCIDRController returns the controller of the ranges, over informer (typed
// ServiceCIDRs, run by its owner).
func NewDefaultCIDRController(ranges []netip.Prefix, informer cache.SharedIndexInformer, client networkingv1client.ServiceCIDRsGetter, metrics *reconcile.Metrics) (*DefaultCIDRController, error) {
	c := &DefaultCIDRController{client: client, lister: networkingv1listers.NewServiceCIDRLister(informer.GetIndexer())}
	for _, p := range ranges {
		c.cidrs = append(c.cidrs, p.String())
	}
	c.ctrl = reconcile.New("default-servicecidr", reconcile.Func[string](c.reconcile), reconcile.Options[string]{Metrics: metrics})
	err := reconcile.WatchOf(c.ctrl, informer, func(s *networkingv1.ServiceCIDR) []string {
		if s.Name == DefaultServiceCIDR {
			return []string{s.Name}
		}
		return nil
	})
	return c, err
}

// Ready reports nil once the default ServiceCIDR exists.
func (c *DefaultCIDRController) Ready() error {
	if !c.synced.Load() {
		return errCIDRNotSynced
	}
	return nil
}

// Run creates the default ServiceCIDR if need be, then keeps it until ctx is done.
func (c *DefaultCIDRController) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("default-servicecidr"))
	if !c.ctrl.WaitForSync(ctx) {
		return nil
	}
	c.ctrl.Add(DefaultServiceCIDR)
	c.ctrl.Drain(ctx)
	c.synced.Store(true)
	return c.ctrl.Run(ctx)
}

func (c *DefaultCIDRController) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	cur, err := c.lister.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		obj := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: c.cidrs}}
		if _, err := c.client.ServiceCIDRs().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, err
		}
		klog.FromContext(ctx).Info("Created the default ServiceCIDR", "cidrs", c.cidrs)
		return reconcile.Result{}, nil // its event queues it again, for its status
	case err != nil:
		return reconcile.Result{}, err
	case cur.DeletionTimestamp != nil:
		return reconcile.Result{RequeueAfter: cidrInterval}, nil
	case len(c.cidrs) == 2 && len(cur.Spec.CIDRs) == 1 && cur.Spec.CIDRs[0] == c.cidrs[0]:
		next := cur.DeepCopy()
		next.Spec.CIDRs = c.cidrs
		_, err := c.client.ServiceCIDRs().Update(ctx, next, metav1.UpdateOptions{})
		return reconcile.Result{}, err
	case !slices.Equal(cur.Spec.CIDRs, c.cidrs):
		klog.FromContext(ctx).Info("The default ServiceCIDR does not match --service-cluster-ip-range; left as it is", "serviceCIDR", cur.Spec.CIDRs, "flag", c.cidrs)
		return reconcile.Result{RequeueAfter: cidrInterval}, nil
	}
	if cond := apimeta.FindStatusCondition(cur.Status.Conditions, networkingv1.ServiceCIDRConditionReady); cond == nil || cond.Status == metav1.ConditionUnknown {
		next := cur.DeepCopy()
		apimeta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady,
			Status: metav1.ConditionTrue, Reason: "ServiceCIDRReady", Message: "Kubernetes default Service CIDR is ready"})
		if _, err := c.client.ServiceCIDRs().UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: cidrInterval}, nil
}
