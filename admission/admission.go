package admission

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
)

// ErrNotSynced means the admission has not read its policies yet.
var ErrNotSynced = errors.New("the admission policies have not been read yet")

// Config says what a Chain admits with.
type Config struct {
	// Registry is the server's registry: which policy APIs are served, and the
	// objects' conversion, defaulting and types.
	Registry *registry.Registry
	// RESTConfig reaches the server with its loopback identity.
	RESTConfig *rest.Config
	// ServerID names the server in the policy plugins' metrics.
	ServerID string
	// CELVersion is the server's minimum compatibility version, the version of the
	// CEL environment set MutatingAdmissionPolicies compile in (nil: the library's
	// default). Policies are compiled when they are read, as stored expressions, as
	// Kubernetes' admission does: with every library the binary has, whatever the
	// version. (Kubernetes also compiles a policy's new expressions at that version
	// when the policy is written; Concord does not: docs/compatibility.md.)
	// ValidatingAdmissionPolicies are compiled by k8s.io/apiserver's plugin, as
	// stored expressions too.
	CELVersion *version.Version
	// MutatingPolicies runs MutatingAdmissionPolicies (while their v1 API is served):
	// the MutatingAdmissionPolicy feature gate. Without it no policy mutates anything,
	// whatever is stored.
	MutatingPolicies bool
	// Authorizer is the server's authorizer, for the policies' authorizer checks.
	Authorizer authorizer.Authorizer
	// ValidatingFirst are validating plugins run before the policies and webhooks
	// (RBAC's escalation check, which Kubernetes makes in RBAC's storage).
	ValidatingFirst []admission.ValidationInterface
	// Builtin, if set, returns the admission of built-in resources, built with the
	// chain's initializer (its clients, informers, authorizer and gates): mutating
	// before the policies and webhooks, validating after ValidatingFirst and before
	// them, as kube-apiserver orders its own plugins (kubesemantics.Admission).
	Builtin func(admission.PluginInitializer) (admission.MutationInterface, admission.ValidationInterface, error)
	// FeatureGate is the server's gate, as the plugins read it; nil: the process's
	// (utilfeature.DefaultFeatureGate).
	FeatureGate featuregate.FeatureGate
	// Versions are the server's binary, emulation and minimum compatibility
	// versions, as the plugins read them (PodSecurity's default policy version).
	Versions basecompatibility.EffectiveVersion
	// Validating are further validating plugins, run after the policies and webhooks
	// in order (ResourceQuota).
	Validating []admission.ValidationInterface
	// ServiceResolver finds the endpoints of the Services webhooks name (the
	// aggregator's resolver, through EndpointSlices); nil: their DNS names.
	ServiceResolver webhookutil.ServiceResolver
}

// Chain is the admission of one server: the mutating plugins (policies, then
// webhooks), then (after validation) the validating ones (policies, webhooks, then
// the further ones), in Kubernetes' order. Run starts it.
type Chain struct {
	objects    *registry.Objects
	mutating   []admission.MutationInterface
	validating []admission.ValidationInterface
	factory    informers.SharedInformerFactory
	drained    chan struct{}
}

var (
	_ admission.MutationInterface   = (*Chain)(nil)
	_ admission.ValidationInterface = (*Chain)(nil)
)

// New assembles the chain cfg describes.
func New(cfg Config) (*Chain, error) {
	restConfig := rest.CopyConfig(cfg.RESTConfig)
	restConfig.QPS = -1 // the loopback identity is exempt from priority and fairness too
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	c := &Chain{
		objects: cfg.Registry.Objects(),
		factory: informers.NewSharedInformerFactory(client, 0),
		drained: make(chan struct{}),
	}
	c.validating = append(c.validating, cfg.ValidatingFirst...)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	gate := cfg.FeatureGate
	if gate == nil {
		gate = utilfeature.DefaultFeatureGate
	}
	init := initializer.New(client, dyn, c.factory, cfg.Authorizer, gate, cfg.Versions, c.drained, mapper)
	if cfg.Builtin != nil {
		m, v, err := cfg.Builtin(init)
		if err != nil {
			return nil, err
		}
		c.mutating, c.validating = append(c.mutating, m), append(c.validating, v)
	}
	if cfg.MutatingPolicies && served(cfg.Registry, "mutatingadmissionpolicies", "mutatingadmissionpolicybindings") {
		p := newMutatingPolicies(cfg.Registry, cfg.CELVersion)
		p.SetAPIServerID(cfg.ServerID)
		init.Initialize(p)
		if err := p.ValidateInitialization(); err != nil {
			return nil, fmt.Errorf("MutatingAdmissionPolicy admission: %w", err)
		}
		c.mutating = append(c.mutating, p)
	}
	var validatingHooks admission.ValidationInterface
	if served(cfg.Registry, "validatingwebhookconfigurations", "mutatingwebhookconfigurations") {
		m, v, err := newWebhooks(init, cfg.ServerID, cfg.ServiceResolver)
		if err != nil {
			return nil, err
		}
		configurations := c.factory.Admissionregistration().V1().MutatingWebhookConfigurations()
		c.mutating, validatingHooks = append(c.mutating, mutatingWebhooks{Plugin: m, synced: configurations.Informer().HasSynced, configurations: configurations.Lister()}), v
	}
	if served(cfg.Registry, "validatingadmissionpolicies", "validatingadmissionpolicybindings") {
		p, err := validating.NewPlugin(nil)
		if err != nil {
			return nil, err
		}
		p.SetAPIServerID(cfg.ServerID)
		init.Initialize(p)
		if err := p.ValidateInitialization(); err != nil {
			return nil, fmt.Errorf("ValidatingAdmissionPolicy admission: %w", err)
		}
		c.validating = append(c.validating, p)
	}
	if validatingHooks != nil {
		c.validating = append(c.validating, validatingHooks)
	}
	c.validating = append(c.validating, cfg.Validating...)
	return c, nil
}

// served reports whether every named admissionregistration.k8s.io resource is served
// in v1.
func served(reg *registry.Registry, resources ...string) bool {
	for _, r := range resources {
		if reg.Served(schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: r}, "v1") == nil {
			return false
		}
	}
	return true
}

// Handles reports whether a plugin of the chain acts on op.
func (c *Chain) Handles(op admission.Operation) bool {
	for _, p := range c.mutating {
		if p.Handles(op) {
			return true
		}
	}
	for _, p := range c.validating {
		if p.Handles(op) {
			return true
		}
	}
	return false
}

// Admit runs the mutating plugins on a, which they may change; if a mutation changed
// what an earlier plugin saw, they run once more (reinvocation, as in Kubernetes).
// o is ignored: the registry's objects are the chain's own.
func (c *Chain) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if err := c.admitOnce(ctx, a); err != nil {
		return err
	}
	if rc := a.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		return c.admitOnce(ctx, a)
	}
	return nil
}

func (c *Chain) admitOnce(ctx context.Context, a admission.Attributes) error {
	for _, p := range c.mutating {
		if !p.Handles(a.GetOperation()) {
			continue
		}
		if err := p.Admit(ctx, a, c.objects); err != nil {
			return err
		}
	}
	return nil
}

// Validate runs the validating plugins on a, in order; the first refusal is the
// answer. o is ignored, as for Admit.
func (c *Chain) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	for _, p := range c.validating {
		if !p.Handles(a.GetOperation()) {
			continue
		}
		if err := p.Validate(ctx, a, c.objects); err != nil {
			return err
		}
	}
	return nil
}

// Run reads the policies until ctx is done, then stops the plugins and returns
// once the informers have stopped. The plugins stop first: the informers they start
// themselves (a parameterized policy's parameters) run until they do, and the
// factory's shutdown waits for every informer it started.
func (c *Chain) Run(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	<-ctx.Done()
	close(c.drained)
	c.factory.Shutdown()
	return nil
}

// Ready reports nil once the policies have been read.
func (c *Chain) Ready() error {
	for typ, synced := range c.factory.WaitForCacheSync(closedChan) {
		if !synced {
			return fmt.Errorf("%w: %v", ErrNotSynced, typ)
		}
	}
	return nil
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
