package aggregator

import (
	"context"

	"github.com/concordproject/concord/reconcile"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// RegistrationName names the registration controller in logs and metrics.
const RegistrationName = "apiservice-registration-controller"

// RunRegistration makes APIServices routable until ctx is done, as kube-aggregator's
// registration controller does: a group-version is proxied (Proxy) only once the
// controller has seen an APIService register it to a backend, and no longer once the
// APIService is deleted or turns local, when the transports to its backend are
// closed. started is called once the APIServices that existed have been registered.
// Every server runs it.
func (a *Aggregator) RunRegistration(ctx context.Context, metrics *reconcile.Metrics, started func()) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("apiservice-registration"))
	ctrl := reconcile.New(RegistrationName, reconcile.Func[string](a.reconcileRegistration), reconcile.Options[string]{Metrics: metrics})
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

// reconcileRegistration routes APIService name's group-version to it if it registers
// one to a backend, else takes the route away.
func (a *Aggregator) reconcileRegistration(ctx context.Context, name string) (reconcile.Result, error) {
	svc, err := a.apiServices.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	gv := groupVersionOf(name)
	remote := err == nil && svc.Spec.Service != nil && svc.Spec.Group == gv.Group && svc.Spec.Version == gv.Version
	a.mu.Lock()
	defer a.mu.Unlock()
	_, had := a.routes[gv]
	if remote {
		a.routes[gv] = struct{}{}
		if !had {
			klog.FromContext(ctx).V(2).Info("Proxying a group-version", "apiservice", name)
		}
		return reconcile.Result{}, nil
	}
	delete(a.routes, gv)
	for k, rt := range a.transports {
		if k.name == name {
			rt.CloseIdleConnections()
			delete(a.transports, k)
		}
	}
	if had {
		klog.FromContext(ctx).V(2).Info("No longer proxying a group-version", "apiservice", name)
	}
	return reconcile.Result{}, nil
}

// routed reports whether the registration controller routes gv to a backend.
func (a *Aggregator) routed(gv schema.GroupVersion) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.routes[gv]
	return ok
}
