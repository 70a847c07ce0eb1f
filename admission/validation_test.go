package admission

import (
	"net"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

func validHook() admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    "hook.example.com",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1/hook")},
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/status"}}}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func config(hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: hooks}
}

func validateConfig(c celEnvironments, obj, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	return c.validateWebhooks(validatingHooks(obj), newWebhookOptions(validatingHooks(old), validatingHooks(obj)))
}

// errorsAre reports whether errs are exactly want (their Error(), in order, each
// containing the wanted text).
func errorsAre(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Errorf("%s: %d errors %v, want %d %q", what, len(errs), errs, len(want), want)
		return
	}
	for i, e := range errs {
		if !strings.Contains(e.Error(), want[i]) {
			t.Errorf("%s: error %d is %q, want %q", what, i, e.Error(), want[i])
		}
	}
}

// Webhook configurations: Kubernetes' checks on creation, and what an update may keep
// of the stored configuration (side effects, review versions, CA bundles, match
// conditions).
func TestValidateWebhooks(t *testing.T) {
	c := newCELEnvironments(version.MustParse("1.36"))
	caPEM, _, err := cert.GenerateSelfSignedCertKey("hooks.example.svc", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(h *admissionregistrationv1.ValidatingWebhook)
		want   []string
	}{
		{"valid", func(*admissionregistrationv1.ValidatingWebhook) {}, nil},
		{"ca bundle", func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.CABundle = caPEM }, nil},
		// Other blocks and text beside the certificates are skipped, as the TLS
		// client's pool skips them and Kubernetes accepts them.
		{"ca bundle with a key", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.CABundle = append(append([]byte{}, caPEM...), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\ntrailing text\n"...)
		}, nil},
		{"ca bundle without a certificate", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.CABundle = []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
		}, []string{"caBundle: Invalid value: must be PEM-encoded CA certificates: no certificate found"}},
		{"service", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr.To("/a//b"), Port: ptr.To[int32](70000)}}
		}, []string{`service.port: Invalid value: 70000: port is not valid`, `service.path: Invalid value: "/a//b": segment[1] may not be empty`}},
		{"user in url", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.URL = ptr.To("https://me@127.0.0.1/#x")
		},
			[]string{`url: Invalid value: "me": user information is not permitted in the URL`, `url: Invalid value: "x": fragments are not permitted in the URL`}},
		{"subresource wildcards", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Resources = []string{"pods/*", "pods/status"}
		},
			[]string{`resources[1]: Invalid value: "pods/status": if 'pods/*' is present, must not specify pods/status`}},
		{"no operations", func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].Operations = nil },
			[]string{"rules[0].operations: Required value"}},
		{"selector", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"k": "not a value"}}
		}, []string{`objectSelector.matchLabels: Invalid value: "not a value"`}},
		{"params in match conditions", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "p", Expression: "params.x == 1"}}
		}, []string{"undeclared reference to 'params'"}},
		{"too new", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "n", Expression: "[1].includes(1)"}}
		}, []string{"(new expressions may only use the CEL libraries and language features of the minimum compatibility version 1.36)"}},
	}
	for _, tc := range cases {
		h := validHook()
		tc.change(&h)
		errorsAre(t, tc.name, validateConfig(c, config(h), nil), tc.want...)
	}

	// What the stored configuration already has may stay.
	stored := validHook()
	stored.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassUnknown)
	stored.AdmissionReviewVersions = []string{"v2"}
	stored.ClientConfig.CABundle = []byte("not PEM")
	stored.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "n", Expression: "[1].includes(1)"}}
	updated := stored
	updated.TimeoutSeconds = ptr.To[int32](5)
	errorsAre(t, "an update keeping what was stored", validateConfig(c, config(updated), config(stored)))
	errorsAre(t, "the same, created", validateConfig(c, config(updated), nil),
		`sideEffects: Unsupported value: "Unknown"`, "caBundle: Invalid value", "minimum compatibility version 1.36", `admissionReviewVersions: Invalid value: ["v2"]`)
	// A changed match condition compiles anew; the stored one as stored.
	updated.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "n", Expression: "[1].includes(1)"}, {Name: "m", Expression: "[2].includes(2)"}}
	errorsAre(t, "a new match condition beside a stored one", validateConfig(c, config(updated), config(stored)),
		`matchConditions[1].expression: Invalid value: "[2].includes(2)"`)
}

// Policies: the environment of each kind of expression (params, variables,
// authorizer, patch types), and stored expressions kept on update.
func TestValidatePolicies(t *testing.T) {
	c := newCELEnvironments(version.MustParse("1.36"))
	match := &admissionregistrationv1.MatchResources{
		MatchPolicy: ptr.To(admissionregistrationv1.Equivalent), NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}},
	}
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: match,
		ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
		Variables: []admissionregistrationv1.Variable{{Name: "size", Expression: "size(object.data)"}, {Name: "twice", Expression: "variables.size * 2"}},
		Validations: []admissionregistrationv1.Validation{{Expression: "variables.twice < int(params.data.max) && authorizer.group('').resource('pods').check('get').allowed()",
			MessageExpression: "'too big: ' + string(variables.size)"}},
		AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "size", ValueExpression: "string(variables.size)"}},
	}}
	errorsAre(t, "a policy using params, variables and the authorizer", c.validateValidatingPolicy(vap, validatingPolicyOptions(vap, nil)))
	noParams := vap.DeepCopy()
	noParams.Spec.ParamKind = nil
	errorsAre(t, "params without a paramKind", c.validateValidatingPolicy(noParams, validatingPolicyOptions(noParams, nil)), "undeclared reference to 'params'")
	newer := vap.DeepCopy()
	newer.Spec.Validations[0].Expression = "[1].includes(variables.size)"
	errorsAre(t, "a new expression too new", c.validateValidatingPolicy(newer, validatingPolicyOptions(newer, vap)), "minimum compatibility version 1.36")
	relabelled := newer.DeepCopy()
	relabelled.Labels = map[string]string{"k": "v"}
	errorsAre(t, "a stored expression too new", c.validateValidatingPolicy(relabelled, validatingPolicyOptions(relabelled, newer)))

	mp := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
		FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: match, ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		Mutations: []admissionregistrationv1.Mutation{
			{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"a": "b"}}}`}},
			{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/data/x", value: "y"}]`}, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "x"}},
		},
	}}
	errorsAre(t, "a mutating policy", c.validateMutatingPolicy(mp, mutatingPolicyOptions(mp, nil)),
		`mutations[1].applyConfiguration: Invalid value: "{applyConfiguration}": must not be specified when patchType is JSONPatch`)
}
