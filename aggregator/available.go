package aggregator

import (
	"context"
	"fmt"
	"time"

	"github.com/concordproject/concord/reconcile"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1client "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
)

// AvailabilityName names the availability controller in logs and metrics, and is the
// field manager of its status writes.
const AvailabilityName = "apiservice-status-available-controller"

// How often a remote APIService's backend is checked again: while it passes, and
// while it fails.
const (
	recheckPassed = 10 * time.Second
	recheckFailed = 5 * time.Second
)

// RunAvailability keeps the Available condition of every APIService registered to a
// backend, writing it through client, until ctx is done: available once its backend
// resolves and answers its discovery, checked again periodically and whenever its
// Service or EndpointSlices change. Meant to run elected; a new term calls it again.
// (Local APIServices are RunLocalAvailability's.)
func (a *Aggregator) RunAvailability(ctx context.Context, client apiregistrationv1client.APIServicesGetter, metrics *reconcile.Metrics) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("apiservice-availability"))
	ctrl := reconcile.New(AvailabilityName, reconcile.Func[string](func(ctx context.Context, name string) (reconcile.Result, error) {
		return a.reconcileAvailability(ctx, client, name)
	}), reconcile.Options[string]{Workers: 2, Metrics: metrics})
	return a.follow(ctx, ctrl, nil)
}

// LocalAvailabilityName names the local availability controller in logs and metrics,
// and is the field manager of its status writes.
const LocalAvailabilityName = "apiservice-status-local-available-controller"

// RunLocalAvailability keeps the Available condition of every local APIService
// (spec.service nil: served by the servers themselves) True with reason Local, as
// kube-aggregator's local availability controller does, until ctx is done; started is
// called once it has read the APIServices. Every server runs it: the servers write
// the same condition, and only when it is missing or different.
func (a *Aggregator) RunLocalAvailability(ctx context.Context, client apiregistrationv1client.APIServicesGetter, metrics *reconcile.Metrics, started func()) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("apiservice-local-availability"))
	ctrl := reconcile.New(LocalAvailabilityName, reconcile.Func[string](func(ctx context.Context, name string) (reconcile.Result, error) {
		svc, err := a.apiServices.Get(name)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		if err != nil || svc.Spec.Service != nil {
			return reconcile.Result{}, err
		}
		cond := apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue,
			Reason: ReasonLocal, Message: "Local APIServices are always available"}
		return reconcile.Result{}, a.writeCondition(ctx, client, svc, cond, LocalAvailabilityName)
	}), reconcile.Options[string]{Workers: 2, Metrics: metrics})
	if err := reconcile.WatchOf(ctrl, a.cfg.APIServices, apiServiceName); err != nil {
		return err
	}
	if !ctrl.WaitForSync(ctx) {
		return nil
	}
	ctrl.Drain(ctx)
	started()
	return ctrl.Run(ctx)
}

// apiServiceName is a keys function of the reconcile runtime: an APIService's name.
func apiServiceName(s *apiregistrationv1.APIService) []string { return []string{s.Name} }

// follow queues into ctrl the APIServices that each change of an APIService, Service
// or EndpointSlice concerns, and runs ctrl until ctx is done; started, if set, is
// called once the informers have delivered what they hold.
func (a *Aggregator) follow(ctx context.Context, ctrl *reconcile.Controller[string], started func()) error {
	handlers := []struct {
		inf     cache.SharedIndexInformer
		handler cache.ResourceEventHandler
	}{
		{a.cfg.APIServices, reconcile.HandlerOf(ctrl, func(s *apiregistrationv1.APIService) []string { return []string{s.Name} })},
		{a.cfg.Services, reconcile.HandlerOf(ctrl, func(s *corev1.Service) []string { return a.servedBy(s.Namespace, s.Name) })},
		{a.cfg.EndpointSlices, reconcile.HandlerOf(ctrl, func(s *discoveryv1.EndpointSlice) []string {
			return a.servedBy(s.Namespace, s.Labels[discoveryv1.LabelServiceName])
		})},
	}
	var synced []cache.InformerSynced
	for _, h := range handlers {
		reg, err := h.inf.AddEventHandler(h.handler)
		if err != nil {
			return fmt.Errorf("following the aggregator's informers: %w", err)
		}
		defer func() { _ = h.inf.RemoveEventHandler(reg) }()
		synced = append(synced, reg.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	if started != nil {
		started()
	}
	return ctrl.Run(ctx)
}

// servedBy returns the APIServices whose backend is Service namespace/name.
func (a *Aggregator) servedBy(namespace, name string) []string {
	all, err := a.apiServices.List(labels.Everything())
	if err != nil || name == "" {
		return nil
	}
	var out []string
	for _, s := range all {
		if ref := s.Spec.Service; ref != nil && ref.Namespace == namespace && ref.Name == name {
			out = append(out, s.Name)
		}
	}
	return out
}

// reconcileAvailability checks APIService name and writes its Available condition if
// it changed.
func (a *Aggregator) reconcileAvailability(ctx context.Context, client apiregistrationv1client.APIServicesGetter, name string) (reconcile.Result, error) {
	svc, err := a.apiServices.Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if svc.Spec.Service == nil {
		return reconcile.Result{}, nil // RunLocalAvailability's
	}
	cond := apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue}
	next := recheckPassed
	if _, err := a.fetch(ctx, svc); err != nil {
		cond.Status, cond.Reason, cond.Message = apiregistrationv1.ConditionFalse, reasonOf(err), err.Error()
		next = recheckFailed
	} else {
		cond.Reason, cond.Message = ReasonPassed, "all checks passed"
	}
	if err := a.writeCondition(ctx, client, svc, cond, AvailabilityName); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// writeCondition sets cond on svc's status as manager, unless it already says so; its
// transition time moves only when its status does.
func (a *Aggregator) writeCondition(ctx context.Context, client apiregistrationv1client.APIServicesGetter, svc *apiregistrationv1.APIService, cond apiregistrationv1.APIServiceCondition, manager string) error {
	_, old := available(svc)
	if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
		return nil
	}
	cond.LastTransitionTime = metav1.Now()
	if old != nil && old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	next := svc.DeepCopy()
	conds := next.Status.Conditions[:0]
	for _, c := range next.Status.Conditions {
		if c.Type != apiregistrationv1.Available {
			conds = append(conds, c)
		}
	}
	next.Status.Conditions = append(conds, cond)
	_, err := client.APIServices().UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: manager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).V(2).Info("APIService availability", "apiservice", svc.Name, "status", cond.Status, "reason", cond.Reason, "message", cond.Message)
	}
	return err
}
