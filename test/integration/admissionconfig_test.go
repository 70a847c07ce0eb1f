package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// includesCheck uses the lists library's includes, new in the CEL environment of
// Kubernetes 1.37: a new expression may use it only at a minimum compatibility
// version of 1.37.
const includesCheck = "[1, 2].includes(size(object.data))"

// sizePolicy is a ValidatingAdmissionPolicy on the ConfigMaps of namespace
// (labelled policy-test=namespace) with expr as its validation.
func sizePolicy(name, namespace, expr string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: inNamespace(namespace, "", "v1", "configmaps"),
			Validations:      []admissionregistrationv1.Validation{{Expression: expr, Message: "one or two keys"}},
		},
	}
}

// wantCompileRefusal checks that err is a 422 whose cause at field says, with text,
// why the expression does not compile.
func wantCompileRefusal(t *testing.T, what string, err error, field, text string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !hasCause(err, field, text) {
		t.Errorf("%s: %v (causes %q), want 422 at %s: ... %s", what, err, statusCauses(err), field, text)
	}
}

// Admission policies and webhook configurations whose CEL does not compile are
// refused when written, 422, with the compiler's message under the expression's path:
// every kind of expression of ValidatingAdmissionPolicies, MutatingAdmissionPolicies
// and webhooks' matchConditions.
func TestAdmissionConfigurationCEL(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	arv1 := c.Servers[0].Clientset(t).AdmissionregistrationV1()
	broken := "object.data.size() >"
	vap := func(change func(*admissionregistrationv1.ValidatingAdmissionPolicySpec)) error {
		p := sizePolicy("broken", "nowhere", "true")
		change(&p.Spec)
		_, err := arv1.ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{})
		return err
	}
	wantCompileRefusal(t, "a validation", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) { s.Validations[0].Expression = broken }),
		"spec.validations[0].expression", "compilation failed: ERROR: <input>:1:21: Syntax error")
	wantCompileRefusal(t, "a message expression", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.Validations[0].MessageExpression = "'too many: ' + 1"
	}),
		"spec.validations[0].messageExpression", "found no matching overload for '_+_'")
	wantCompileRefusal(t, "a variable", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.Variables = []admissionregistrationv1.Variable{{Name: "n", Expression: broken}}
	}), "spec.variables[0].expression", "Syntax error")
	wantCompileRefusal(t, "a match condition", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "params.x"}}
	}), "spec.matchConditions[0].expression", "undeclared reference to 'params'")
	wantCompileRefusal(t, "an audit annotation", vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: "1"}}
	}), "spec.auditAnnotations[0].valueExpression", "must evaluate to one of [string null_type]")
	err := vap(func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.MatchConstraints.ResourceRules = nil
		s.Validations = nil
	})
	if !apierrors.IsInvalid(err) || !hasCause(err, "spec.matchConstraints.resourceRules", "Required value") || !hasCause(err, "spec.validations", "validations or auditAnnotations must contain at least one item") {
		t.Errorf("a policy without rules or validations: %v %q", err, statusCauses(err))
	}

	mutating := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: inNamespace("nowhere", "", "v1", "configmaps"), ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[JSONPatch{op: 1}]"}}},
		},
	}
	_, err = arv1.MutatingAdmissionPolicies().Create(ctx, mutating, metav1.CreateOptions{})
	wantCompileRefusal(t, "a JSONPatch mutation", err, "spec.mutations[0].jsonPatch.expression", "compilation failed")
	mutating.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
	mutating.Spec.Mutations[0].JSONPatch.Expression = `[JSONPatch{op: "add", path: "/data/k", value: "v"}]`
	if _, err := arv1.MutatingAdmissionPolicies().Create(ctx, mutating, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!hasCause(err, "spec.matchConstraints.resourceRules.operations", `Unsupported value: "DELETE"`) {
		t.Errorf("a mutating policy of deletions: %v %q", err, statusCauses(err))
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn}}}
	if _, err := arv1.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!hasCause(err, "spec.validationActions", "must not contain both Deny and Warn") {
		t.Errorf("a binding with Deny and Warn: %v %q", err, statusCauses(err))
	}
}

// Admission policies and webhook configurations across emulation versions: a new
// expression compiles with the CEL libraries of the server's minimum compatibility
// version only (refused below 1.37 for includes, with a note saying why), and what a
// server at 1.37 stored keeps being enforced, by both servers, and updatable after a
// restart one emulation step down (1.36, minimum compatibility 1.35) and back up;
// only new expressions using the newer library are refused there.
func TestAdmissionConfigurationsAcrossEmulation(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 0 {
			celSetVersions("1.37", "1.37")(i, o)
		}
	}))
	newer, older := c.Servers[0], c.Servers[1] // minimum compatibility 1.37 and 1.36 (the default)
	ctx := t.Context()
	admin := newer.Clientset(t)
	policyNamespace(t, admin, "emulated")
	webhookNamespace(t, admin, "wh-emulated", "emulated", nil)
	hooks := startWebhookServer(t)
	hooks.handle("/emulated", deny(http.StatusForbidden, "refused by the webhook"))

	_, err := older.Clientset(t).AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, sizePolicy("sizes", "emulated", includesCheck), metav1.CreateOptions{})
	wantCompileRefusal(t, "includes at minimum compatibility 1.36", err, "spec.validations[0].expression", "minimum compatibility version 1.36")
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, sizePolicy("sizes", "emulated", includesCheck), metav1.CreateOptions{}); err != nil {
		t.Fatalf("includes at minimum compatibility 1.37: %v", err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "sizes"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "sizes", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hook := hookIn(hooks, "emulated.example.com", "/emulated", "emulated", nil, "configmaps")
	hook.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "three-keys", Expression: "![1, 2].includes(size(object.data))"}}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "emulated"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{hook}}
	_, err = older.Clientset(t).AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{})
	wantCompileRefusal(t, "a match condition using includes at 1.36", err, "webhooks[0].matchConditions[0].expression", "minimum compatibility version 1.36")
	if _, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a match condition using includes at 1.37: %v", err)
	}
	checkEmulatedAdmission(t, c, "before")

	// One emulation step down, then back up.
	for _, step := range []struct{ emulation, minCompat, refusedAt string }{{"1.36", "", "1.35"}, {"1.37", "1.37", ""}} {
		newer.Stop(t)
		celSetVersions(step.emulation, step.minCompat)(0, newer.Options)
		newer.Restart(t)
		checkEmulatedAdmission(t, c, "at emulation "+step.emulation)
		arv1 := newer.Clientset(t).AdmissionregistrationV1()
		// Unrelated updates keep the stored expressions.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := arv1.ValidatingAdmissionPolicies().Get(ctx, "sizes", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Labels = map[string]string{"emulation": step.emulation}
			_, err = arv1.ValidatingAdmissionPolicies().Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Errorf("at emulation %s: an unrelated update of the policy: %v", step.emulation, err)
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			w, err := arv1.ValidatingWebhookConfigurations().Get(ctx, "emulated", metav1.GetOptions{})
			if err != nil {
				return err
			}
			w.Webhooks[0].TimeoutSeconds = ptr.To[int32](7)
			_, err = arv1.ValidatingWebhookConfigurations().Update(ctx, w, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Errorf("at emulation %s: an unrelated update of the webhook configuration: %v", step.emulation, err)
		}
		_, err = arv1.ValidatingAdmissionPolicies().Create(ctx, sizePolicy("sizes-"+step.emulation, "emulated", includesCheck), metav1.CreateOptions{})
		if step.refusedAt != "" {
			wantCompileRefusal(t, "a new policy using includes at emulation "+step.emulation, err, "spec.validations[0].expression", "minimum compatibility version "+step.refusedAt)
		} else if err != nil {
			t.Errorf("a new policy using includes at emulation %s: %v", step.emulation, err)
		}
	}
}

// checkEmulatedAdmission checks that every server enforces the policy (one or two
// keys, else refused) and the webhook (called for three keys, through its match
// condition).
func checkEmulatedAdmission(t *testing.T, c *harness.Cluster, phase string) {
	t.Helper()
	ctx := t.Context()
	for _, s := range c.Servers {
		cs := s.Clientset(t)
		waitFor(t, fmt.Sprintf("%s: the policy on server %d", phase, s.Index), func() (bool, error) {
			three := configMap("three", map[string]string{"a": "1", "b": "2", "c": "3"})
			_, err := cs.CoreV1().ConfigMaps("emulated").Create(ctx, three, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "one or two keys"), nil
		})
		if _, err := cs.CoreV1().ConfigMaps("emulated").Create(ctx, configMap(fmt.Sprintf("ok-%d", s.Index), map[string]string{"a": "1"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("%s, server %d: a ConfigMap the policy accepts: %v", phase, s.Index, err)
		}
		checkWebhookCondition(t, cs, phase, s.Index)
	}
}

func checkWebhookCondition(t *testing.T, cs kubernetes.Interface, phase string, index int) {
	t.Helper()
	ctx := t.Context()
	three := configMap("three", map[string]string{"a": "1", "b": "2", "c": "3"})
	waitFor(t, fmt.Sprintf("%s: the webhook on server %d", phase, index), func() (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("wh-emulated").Create(ctx, three, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return deniedWith(err, http.StatusForbidden, "refused by the webhook"), nil
	})
	if _, err := cs.CoreV1().ConfigMaps("wh-emulated").Create(ctx, configMap("one", map[string]string{"a": "1"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("%s, server %d: a ConfigMap the webhook's condition excludes: %v", phase, index, err)
	}
}
