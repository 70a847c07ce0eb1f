package kubesemantics

import (
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	"k8s.io/utils/ptr"
)

const arGroup = "admissionregistration.k8s.io"

func webhook(name string) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: name, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://hooks.example.com/validate")},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}
}

func TestValidatingWebhookConfigurations(t *testing.T) {
	r := cpResource(t, arGroup, "validatingwebhookconfigurations")
	ctx := t.Context()
	config := func(name string, hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Webhooks: hooks}
	}
	created, errs := cpCreate(ctx, t, r, "v1", config("hooks", webhook("a.example.com")))
	cpWant(t, "a valid configuration", errs)
	var got admissionregistrationv1.ValidatingWebhookConfiguration
	cpInto(t, created, &got)
	if got.Generation != 1 || got.Webhooks[0].FailurePolicy == nil || *got.Webhooks[0].TimeoutSeconds != 10 || got.Webhooks[0].Rules[0].Scope == nil {
		t.Errorf("created: %+v, want generation 1 and kube's defaults", got)
	}
	noSideEffects, dup := webhook("b.example.com"), webhook("a.example.com")
	noSideEffects.SideEffects, noSideEffects.TimeoutSeconds = nil, ptr.To[int32](31)
	_, errs = cpCreate(ctx, t, r, "v1", config("hooks", webhook("a.example.com"), dup, noSideEffects))
	cpWant(t, "a duplicate name, no side effects, a long timeout", errs, "webhooks[1].name: Duplicate value",
		"webhooks[2].sideEffects: Required value", "webhooks[2].timeoutSeconds: Invalid value")
	_, errs = cpCreate(ctx, t, r, "v1", config("mine.static.k8s.io", webhook("a.example.com")))
	cpWant(t, "a manifest's name (reserved at 1.37)", errs, "metadata.name: Invalid value")

	same, errs := cpUpdate(ctx, t, r, "v1", "", config("hooks", webhook("a.example.com")), created)
	cpWant(t, "an update changing nothing", errs)
	changed := webhook("a.example.com")
	changed.TimeoutSeconds = ptr.To[int32](7)
	updated, errs := cpUpdate(ctx, t, r, "v1", "", config("hooks", changed), created)
	cpWant(t, "an update of a webhook", errs)
	if same.GetGeneration() != 1 || updated.GetGeneration() != 2 {
		t.Errorf("generations %d and %d, want 1 unchanged and 2 changed", same.GetGeneration(), updated.GetGeneration())
	}
}

func TestMutatingWebhookConfigurations(t *testing.T) {
	r := cpResource(t, arGroup, "mutatingwebhookconfigurations")
	ctx := t.Context()
	hook := admissionregistrationv1beta1.MutatingWebhook{Name: "m.example.com", SideEffects: ptr.To(admissionregistrationv1beta1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		ClientConfig:            admissionregistrationv1beta1.WebhookClientConfig{Service: &admissionregistrationv1beta1.ServiceReference{Namespace: "ns", Name: "svc"}}}
	config := &admissionregistrationv1beta1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Webhooks: []admissionregistrationv1beta1.MutatingWebhook{hook}}
	created, errs := cpCreate(ctx, t, r, "v1beta1", config)
	cpWant(t, "a valid v1beta1 configuration", errs)
	var got admissionregistrationv1beta1.MutatingWebhookConfiguration
	cpInto(t, created, &got)
	w := got.Webhooks[0]
	if ptr.Deref(w.ReinvocationPolicy, "") != admissionregistrationv1beta1.NeverReinvocationPolicy || *w.ClientConfig.Service.Port != 443 ||
		*w.MatchPolicy != admissionregistrationv1beta1.Exact {
		t.Errorf("v1beta1 defaults: %+v", w)
	}
	hook.ReinvocationPolicy, hook.ClientConfig.Service = ptr.To(admissionregistrationv1beta1.ReinvocationPolicyType("Always")), nil
	config.Webhooks = []admissionregistrationv1beta1.MutatingWebhook{hook}
	_, errs = cpCreate(ctx, t, r, "v1beta1", config)
	cpWant(t, "no client, an unknown reinvocation", errs, "webhooks[0].clientConfig: Required value",
		"webhooks[0].reinvocationPolicy: Unsupported value")
}

func sizePolicy(expr string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sizes", ResourceVersion: "1"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE"},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expr}},
		},
		Status: admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 7}}
}

func TestValidatingAdmissionPolicies(t *testing.T) {
	r := cpResource(t, arGroup, "validatingadmissionpolicies")
	ctx := t.Context()
	created, errs := cpCreate(ctx, t, r, "v1", sizePolicy("size(object.data) < 3"))
	cpWant(t, "a valid policy", errs)
	var got admissionregistrationv1.ValidatingAdmissionPolicy
	cpInto(t, created, &got)
	if got.Generation != 1 || got.Status.ObservedGeneration != 0 || *got.Spec.FailurePolicy != admissionregistrationv1.Fail ||
		*got.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("created: %+v, want generation 1, no status, kube's defaults", got)
	}
	_, errs = cpCreate(ctx, t, r, "v1", sizePolicy("object.data.size() >"))
	cpWant(t, "an expression that does not compile", errs, "spec.validations[0].expression: Invalid value")
	empty := sizePolicy("true")
	empty.Spec.Validations, empty.Spec.MatchConstraints.ResourceRules = nil, nil
	_, errs = cpCreate(ctx, t, r, "v1", empty)
	cpWant(t, "no validations, no rules", errs, "spec.validations: Required value", "spec.auditAnnotations: Required value",
		"spec.matchConstraints.resourceRules: Required value")

	updated, errs := cpUpdate(ctx, t, r, "v1", "", sizePolicy("size(object.data) < 4"), created)
	cpWant(t, "a new expression", errs)
	cpInto(t, updated, &got)
	if got.Generation != 2 || got.Status.ObservedGeneration != 0 {
		t.Errorf("updated: generation %d, status %+v; want 2, the stored status", got.Generation, got.Status)
	}
	status := sizePolicy("ignored")
	status.Labels = map[string]string{"by": "status"}
	status.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{FieldRef: "spec.validations[0].expression", Warning: "w"}}}
	written, errs := cpUpdate(ctx, t, r, "v1", "status", status, updated)
	cpWant(t, "a status update", errs)
	cpInto(t, written, &got)
	if got.Spec.Validations[0].Expression != "size(object.data) < 4" || got.Status.ObservedGeneration != 7 || got.Labels != nil {
		t.Errorf("after a status update: %+v", got)
	}
	status.Status.TypeChecking.ExpressionWarnings[0].Warning = ""
	_, errs = cpUpdate(ctx, t, r, "v1", "status", status, updated)
	cpWant(t, "a warning without text", errs, "status.typeChecking.expressionWarnings[0].warning: Required value")
}

func TestValidatingAdmissionPolicyBindings(t *testing.T) {
	r := cpResource(t, arGroup, "validatingadmissionpolicybindings")
	ctx := t.Context()
	binding := func(actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "1"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "sizes", ValidationActions: actions}}
	}
	created, errs := cpCreate(ctx, t, r, "v1", binding(admissionregistrationv1.Deny))
	cpWant(t, "a valid binding", errs)
	if created.GetGeneration() != 1 {
		t.Errorf("generation %d, want 1", created.GetGeneration())
	}
	_, errs = cpCreate(ctx, t, r, "v1", binding(admissionregistrationv1.Deny, admissionregistrationv1.Warn))
	cpWant(t, "Deny and Warn", errs, "spec.validationActions: Invalid value")
	_, errs = cpCreate(ctx, t, r, "v1", binding())
	cpWant(t, "no action", errs, "spec.validationActions: Required value")
	updated, errs := cpUpdate(ctx, t, r, "v1", "", binding(admissionregistrationv1.Audit), created)
	cpWant(t, "a new action", errs)
	if updated.GetGeneration() != 2 {
		t.Errorf("generation %d after a change, want 2", updated.GetGeneration())
	}
}

func TestMutatingAdmissionPolicies(t *testing.T) {
	r := cpResource(t, arGroup, "mutatingadmissionpolicies")
	ctx := t.Context()
	policy := func(ops admissionregistrationv1.OperationType, expr string) *admissionregistrationv1.MutatingAdmissionPolicy {
		return &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "m", ResourceVersion: "1"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{ops},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
				Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}}}}
	}
	created, errs := cpCreate(ctx, t, r, "v1", policy("CREATE", `[JSONPatch{op: "add", path: "/data/k", value: "v"}]`))
	cpWant(t, "a valid mutating policy", errs)
	if created.GetGeneration() != 1 {
		t.Errorf("generation %d, want 1", created.GetGeneration())
	}
	_, errs = cpCreate(ctx, t, r, "v1", policy("DELETE", "[JSONPatch{op: 1}]"))
	cpWant(t, "a deletion, a patch that does not compile", errs, "spec.matchConstraints.resourceRules.operations: Unsupported value",
		"spec.mutations[0].jsonPatch.expression: Invalid value")
}

func TestMutatingAdmissionPolicyBindings(t *testing.T) {
	r := cpResource(t, arGroup, "mutatingadmissionpolicybindings")
	ctx := t.Context()
	binding := func(policy string) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
		return &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "1"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy}}
	}
	created, errs := cpCreate(ctx, t, r, "v1", binding("m"))
	cpWant(t, "a valid binding", errs)
	_, errs = cpCreate(ctx, t, r, "v1", binding(""))
	cpWant(t, "no policy", errs, "spec.policyName: Required value")
	_, errs = cpUpdate(ctx, t, r, "v1", "", binding("Not/A/Name"), created)
	cpWant(t, "an update to a bad policy name", errs, "spec.policyName: Invalid value")
}

// The reserved suffix of manifests' configurations is refused while they are
// enabled (1.37), only warned of before (1.36); webhooks' rules naming resources
// webhooks never see are warned of.
func TestAdmissionConfigurationWarnings(t *testing.T) {
	at := func(v string) *Gates {
		g, err := NewGates(version.MustParse(v), version.MustParse(v).SubtractMinor(1), nil)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	const static = "mine.static.k8s.io"
	at("1.36").Do(func() {
		if errs := staticSuffixErrors(static); len(errs) != 0 {
			t.Errorf("1.36: %v, want none", errs)
		}
		if w := staticSuffixCreateWarnings(static); len(w) != 1 {
			t.Errorf("1.36: warnings %q, want one", w)
		}
	})
	at("1.37").Do(func() {
		if errs := staticSuffixErrors(static); len(errs) != 1 || errs[0].Field != "metadata.name" {
			t.Errorf("1.37: %v, want metadata.name refused", errs)
		}
		if w := staticSuffixCreateWarnings(static); len(w) != 0 {
			t.Errorf("1.37: warnings %q, want none", w)
		}
		c := &admissionregistration.ValidatingWebhookConfiguration{Webhooks: []admissionregistration.ValidatingWebhook{{
			Rules: []admissionregistration.RuleWithOperations{{Rule: admissionregistration.Rule{APIGroups: []string{"authorization.k8s.io"},
				Resources: []string{"selfsubjectaccessreviews"}}}}}}}
		w := validatingWebhooksKind.warnCreate(t.Context(), c)
		if !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "selfsubjectaccessreviews") }) {
			t.Errorf("warnings %q, want one on selfsubjectaccessreviews", w)
		}
	})
}

// includes is of the CEL environment of 1.37: a new expression may use it only at a
// minimum compatibility version of 1.37, whatever version kube's validation
// compiles at in this process; a stored one may keep it.
func TestAdmissionCELAtMinCompatibility(t *testing.T) {
	const includes = "[1, 2].includes(size(object.data))"
	at := func(emulation, minCompat string) *registry.Resource {
		r := cpResourceUnconfigured(t, arGroup, "validatingadmissionpolicies")
		if !cpSemanticsAt(t, emulation, minCompat).Configure(r) {
			t.Fatal("not configured")
		}
		return r
	}
	ctx := t.Context()
	stored, errs := cpCreate(ctx, t, at("1.37", "1.37"), "v1", sizePolicy(includes))
	cpWant(t, "includes at minimum compatibility 1.37", errs)
	for _, v := range [][2]string{{"1.37", "1.36"}, {"1.36", "1.35"}} {
		r := at(v[0], v[1])
		_, errs = cpCreate(ctx, t, r, "v1", sizePolicy(includes))
		cpWant(t, "includes at "+v[1], errs, "spec.validations[0].expression: Invalid value")
		cpDetail(t, "includes at "+v[1], errs, "spec.validations[0].expression", "minimum compatibility version "+v[1])
		relabelled := sizePolicy(includes)
		relabelled.Labels = map[string]string{"at": v[1]}
		_, errs = cpUpdate(ctx, t, r, "v1", "", relabelled, stored)
		cpWant(t, "an unrelated update of the stored policy at "+v[1], errs)
		_, errs = cpCreate(ctx, t, r, "v1", sizePolicy("object.data.size() >"))
		cpWant(t, "a syntax error at "+v[1], errs, "spec.validations[0].expression: Invalid value")
		cpDetail(t, "a syntax error at "+v[1], errs, "spec.validations[0].expression", "Syntax error")
	}

	hooks := cpResourceUnconfigured(t, arGroup, "validatingwebhookconfigurations")
	if !cpSemanticsAt(t, "1.36", "1.35").Configure(hooks) {
		t.Fatal("not configured")
	}
	w := webhook("a.example.com")
	w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "!" + includes}}
	_, errs = cpCreate(ctx, t, hooks, "v1", &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "h"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{w}})
	cpDetail(t, "a match condition using includes at 1.35", errs, "webhooks[0].matchConditions[0].expression", "minimum compatibility version 1.35")
}
