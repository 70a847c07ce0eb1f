package admission

import (
	"context"
	"errors"

	"github.com/concordproject/concord/reconcile"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	applyv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	admissionregistrationv1listers "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
)

// typeCheckingManager is the field manager of the status the controller applies,
// kube-controller-manager's controller's name.
const typeCheckingManager = "validatingadmissionpolicy-status"

// ErrTypeCheckingConfig means a TypeCheckingConfig lacks a field.
var ErrTypeCheckingConfig = errors.New("admission: the type-checking controller needs RESTConfig and Election")

// TypeCheckingConfig configures a TypeChecking controller.
type TypeCheckingConfig struct {
	// RESTConfig reaches this server as itself: policies are read and their status
	// written through it, the types of what they match read from its discovery and
	// OpenAPI v3 documents.
	RESTConfig *rest.Config
	// Election elects the server that writes the status (the server's election of
	// its controllers).
	Election reconcile.Elector
	// ReconcileMetrics receives the reconcile runtime's samples (nil: none).
	ReconcileMetrics *reconcile.Metrics
}

// TypeChecking is the ValidatingAdmissionPolicy status controller that
// kube-controller-manager runs: it type-checks each policy's validations and message
// expressions against the types of the resources the policy matches (their OpenAPI v3
// schemas, built-in or custom) and of its paramKind, with k8s.io/apiserver's type
// checker, and writes the warnings to status.typeChecking with
// status.observedGeneration, once per generation. Every server runs one; they elect a
// leader, which alone writes. Warnings never change what a policy does.
type TypeChecking struct {
	cfg    TypeCheckingConfig
	client kubernetes.Interface
}

// NewTypeChecking returns a type-checking controller; Run starts it.
func NewTypeChecking(cfg TypeCheckingConfig) (*TypeChecking, error) {
	if cfg.RESTConfig == nil || cfg.Election == nil {
		return nil, ErrTypeCheckingConfig
	}
	restCfg := rest.CopyConfig(cfg.RESTConfig)
	restCfg.QPS = -1
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	return &TypeChecking{cfg: cfg, client: client}, nil
}

// Run type-checks policies while the server leads its election, until ctx is done.
func (c *TypeChecking) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("validatingadmissionpolicy-status"))
	return c.cfg.Election.RunElected(ctx, c.lead)
}

// typeCheckingTerm is one term of leadership.
type typeCheckingTerm struct {
	client   kubernetes.Interface
	policies admissionregistrationv1listers.ValidatingAdmissionPolicyLister
	checker  *validating.TypeChecker
}

// lead keeps the policies' status until ctx is done (leadership lost).
func (c *TypeChecking) lead(ctx context.Context) {
	factory := informers.NewSharedInformerFactory(c.client, 0)
	informer := factory.Admissionregistration().V1().ValidatingAdmissionPolicies()
	discovery := memory.NewMemCacheClient(c.client.Discovery())
	term := &typeCheckingTerm{
		client:   c.client,
		policies: informer.Lister(),
		checker: &validating.TypeChecker{
			SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: c.client.Discovery()},
			// Reset when a resource is not found (a CRD created since).
			RestMapper: restmapper.NewDeferredDiscoveryRESTMapper(discovery),
		},
	}
	ctrl := reconcile.New("validatingadmissionpolicy-status", reconcile.Func[string](term.reconcile),
		reconcile.Options[string]{Metrics: c.cfg.ReconcileMetrics})
	if err := reconcile.WatchOf(ctrl, informer.Informer(), func(p *admissionregistrationv1.ValidatingAdmissionPolicy) []string {
		return []string{p.Name}
	}); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot follow the ValidatingAdmissionPolicies")
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	_ = ctrl.Run(ctx)
}

// reconcile type-checks policy name, if its generation has not been checked yet.
func (t *typeCheckingTerm) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	policy, err := t.policies.Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if policy.Generation <= policy.Status.ObservedGeneration {
		return reconcile.Result{}, nil
	}
	warnings := t.checker.Check(policy)
	applied := make([]*applyv1.ExpressionWarningApplyConfiguration, 0, len(warnings))
	for _, w := range warnings {
		applied = append(applied, applyv1.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	status := applyv1.ValidatingAdmissionPolicy(policy.Name).WithStatus(applyv1.ValidatingAdmissionPolicyStatus().
		WithObservedGeneration(policy.Generation).
		WithTypeChecking(applyv1.TypeChecking().WithExpressionWarnings(applied...)))
	_, err = t.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: typeCheckingManager, Force: true})
	return reconcile.Result{}, err
}
