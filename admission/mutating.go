package admission

import (
	"context"

	"github.com/concordproject/concord/openapi"
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// mutatingPolicies is MutatingAdmissionPolicy admission: k8s.io/apiserver's generic
// policy plugin with the mutating dispatcher, whose mutations apply with the
// registry's types.
type mutatingPolicies struct {
	*generic.Plugin[mutating.PolicyHook]
}

func newMutatingPolicies(reg *registry.Registry, celVersion *version.Version) *mutatingPolicies {
	compile := func(p *mutating.Policy) mutating.PolicyEvaluator { return compileMutatingPolicy(p, celVersion) }
	p := generic.NewPlugin(
		// A deletion has no object to mutate.
		admission.NewHandler(admission.Create, admission.Update, admission.Connect),
		func(f informers.SharedInformerFactory, _ kubernetes.Interface, dyn dynamic.Interface, mapper meta.RESTMapper) generic.Source[mutating.PolicyHook] {
			return generic.NewPolicySource(
				f.Admissionregistration().V1().MutatingAdmissionPolicies().Informer(),
				f.Admissionregistration().V1().MutatingAdmissionPolicyBindings().Informer(),
				mutating.NewMutatingAdmissionPolicyAccessor, mutating.NewMutatingAdmissionPolicyBindingAccessor,
				compile, f, dyn, mapper)
		},
		func(a authorizer.UnconditionalAuthorizer, m *matching.Matcher, _ kubernetes.Interface) generic.Dispatcher[mutating.PolicyHook] {
			return mutating.NewDispatcher(a, m, typeConverters{reg})
		},
	)
	p.SetEnabled(true)
	return &mutatingPolicies{p}
}

// Admit applies the mutations of the policies bound to a's object.
func (p *mutatingPolicies) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return p.Dispatch(ctx, a, o)
}

// compileMutatingPolicy compiles a policy's variables, match conditions and
// mutations in the CEL environment of celVersion (stored expressions: everything the
// binary knows). A compilation error is kept in the evaluator and reported when the
// policy is invoked, under its failure policy.
func compileMutatingPolicy(p *mutating.Policy, celVersion *version.Version) mutating.PolicyEvaluator {
	if celVersion == nil {
		celVersion = environment.DefaultCompatibilityVersion()
	}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(celVersion))
	if err != nil {
		return mutating.PolicyEvaluator{Error: err}
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	variables := make([]plugincel.NamedExpressionAccessor, 0, len(p.Spec.Variables))
	for _, v := range p.Spec.Variables {
		variables = append(variables, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(variables, opts, environment.StoredExpressions)

	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		conditions := make([]plugincel.ExpressionAccessor, len(p.Spec.MatchConditions))
		for i := range p.Spec.MatchConditions {
			conditions[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(conditions, opts, environment.StoredExpressions),
			p.Spec.FailurePolicy, "policy", "mutate", p.Name)
	}

	patchOpts := opts
	patchOpts.HasPatchTypes = true
	var patchers []patch.Patcher
	for _, m := range p.Spec.Mutations {
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			ev := compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts, environment.StoredExpressions)
			patchers = append(patchers, patch.NewJSONPatcher(ev))
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			ev := compiler.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchOpts, environment.StoredExpressions)
			patchers = append(patchers, patch.NewApplyConfigurationPatcher(ev))
		}
	}
	return mutating.PolicyEvaluator{Matcher: matcher, Mutators: patchers, CompositedCompiler: compiler}
}

// typeConverters gives mutations the server-side apply types of the registry's
// resources, current at each call (a CRD is typed as soon as it is served).
type typeConverters struct{ reg *registry.Registry }

var _ patch.TypeConverterManager = typeConverters{}

// GetTypeConverter returns the types of gvk's resource, or nil if it has none.
func (t typeConverters) GetTypeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	res := t.reg.ByKind(gvk.GroupKind())
	if res == nil || res.Version(gvk.Version) == nil {
		return nil
	}
	tc, err := openapi.TypeConverter(res)
	if err != nil {
		return nil
	}
	return tc
}

// Run has nothing to refresh: the registry is read at each call.
func (typeConverters) Run(context.Context) {}
