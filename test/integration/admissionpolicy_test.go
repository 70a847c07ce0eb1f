package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/concordproject/concord/harness"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// policyNamespace creates a namespace labelled for the policies of a test.
func policyNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"policy-test": name}}}
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// inNamespace matches the objects of the labelled namespace name, of resources in
// group/version.
func inNamespace(name, group, version string, resources ...string) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy-test": name}},
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources},
		}}},
	}
}

// replicated is a Deployment of n replicas.
func replicated(name string, n int32) *appsv1.Deployment {
	app := map[string]string{"app": name}
	d := deployment(name, app, app)
	d.Spec.Replicas = ptr.To(n)
	return d
}

// warnings records the warnings a client is sent.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.seen, "\n")
}

// ValidatingAdmissionPolicies are enforced on every server, on creations, updates,
// patches and applies of built-in resources, with variables, messageExpression and
// the Deny and Warn actions; objects the policy does not match are admitted.
func TestValidatingAdmissionPolicy(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	policyNamespace(t, admin, "guarded")

	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: inNamespace("guarded", "apps", "v1", "deployments"),
			Variables:        []admissionregistrationv1.Variable{{Name: "replicas", Expression: "object.spec.replicas"}},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "variables.replicas > 1",
				MessageExpression: "'wants replicas > 1, got ' + string(variables.replicas)",
			}},
		},
	}
	created, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Defaulted as kube-apiserver defaults them.
	if m := created.Spec.MatchConstraints; ptr.Deref(created.Spec.FailurePolicy, "") != admissionregistrationv1.Fail ||
		ptr.Deref(m.MatchPolicy, "") != admissionregistrationv1.Equivalent || m.ObjectSelector == nil ||
		ptr.Deref(m.ResourceRules[0].Scope, "") != admissionregistrationv1.AllScopes {
		t.Errorf("policy defaults: %+v", created.Spec)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "replicas", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Every server enforces it once it has read it.
	for _, s := range c.Servers {
		deployments := s.Clientset(t).AppsV1().Deployments("guarded")
		waitFor(t, fmt.Sprintf("the policy on server %d", s.Index), func() (bool, error) {
			_, err := deployments.Create(ctx, replicated("single", 1), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				return false, nil
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "wants replicas > 1, got 1") {
				return false, err
			}
			return true, nil
		})
	}
	deployments := c.Servers[1].Clientset(t).AppsV1().Deployments("guarded")
	if _, err := deployments.Create(ctx, replicated("single", 1), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a Deployment of one replica: %v, want 422", err)
	}
	d, err := deployments.Create(ctx, replicated("pair", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a Deployment of two replicas: %v", err)
	}
	// Not matched: another resource, another namespace.
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "single"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](1), Selector: d.Spec.Selector, Template: d.Spec.Template,
	}}
	if _, err := c.Servers[1].Clientset(t).AppsV1().ReplicaSets("guarded").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Errorf("a ReplicaSet of one replica: %v", err)
	}
	if _, err := c.Servers[1].Clientset(t).AppsV1().Deployments("default").Create(ctx, replicated("single", 1), metav1.CreateOptions{}); err != nil {
		t.Errorf("a Deployment of one replica elsewhere: %v", err)
	}

	// Updates, patches and applies are held to it too, and nothing is written.
	d.Spec.Replicas = ptr.To[int32](1)
	if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("update to one replica: %v, want 422", err)
	}
	if _, err := deployments.Patch(ctx, "pair", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("merge patch to one replica: %v, want 422", err)
	}
	apply := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"pair"},"spec":{"replicas":1}}`)
	if _, err := deployments.Patch(ctx, "pair", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "test", Force: ptr.To(true)}); !apierrors.IsInvalid(err) {
		t.Errorf("apply of one replica: %v, want 422", err)
	}
	if got, err := deployments.Get(ctx, "pair", metav1.GetOptions{}); err != nil || *got.Spec.Replicas != 2 {
		t.Errorf("after refused writes: %v, replicas %v", err, got.Spec.Replicas)
	}

	// The Warn action admits, and tells the client why it would not.
	binding, err = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, "replicas", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Update(ctx, binding, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := &warnings{}
	cfg := rest.CopyConfig(c.Servers[1].Config())
	cfg.WarningHandlerWithContext = seen
	warned := kubernetes.NewForConfigOrDie(cfg).AppsV1().Deployments("guarded")
	waitFor(t, "the Warn action", func() (bool, error) {
		_, err := warned.Create(ctx, replicated("warned", 1), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
	if _, err := warned.Create(ctx, replicated("warned", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("with the Warn action: %v", err)
	}
	if !strings.Contains(seen.all(), "wants replicas > 1, got 1") {
		t.Errorf("warnings %q, want the policy's message", seen.all())
	}
}

// MutatingAdmissionPolicies change what is stored, by ApplyConfiguration and by
// JSONPatch, on creations and updates, of built-in and custom resources alike; a
// policy matching one version of a custom resource mutates requests in another
// (matchPolicy Equivalent, through the registry's conversion).
func TestMutatingAdmissionPolicy(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	policyNamespace(t, admin, "mutated")
	crd, err := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, cronTabCRD("mutated.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitServedEverywhere(t, c, gvrOf(crd, "v2"), crd.CreationTimestamp.Time)

	mutate := func(name string, match *admissionregistrationv1.MatchResources, mutations ...admissionregistrationv1.Mutation) {
		t.Helper()
		policy := &admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: match, Mutations: mutations,
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			},
		}
		if _, err := admin.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
		}
		if _, err := admin.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mutate("replicas", inNamespace("mutated", "apps", "v1", "deployments"), admissionregistrationv1.Mutation{
		PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
			Expression: `Object{metadata: Object.metadata{annotations: {"mutated-by": "admission-policy"}}, spec: Object.spec{replicas: 1337}}`,
		},
	})
	cronTabs := inNamespace("mutated", "mutated.example.com", "v1", "crontabs")
	cronTabs.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	mutate("crontab-image", cronTabs, admissionregistrationv1.Mutation{
		PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{
			Expression: `[JSONPatch{op: "add", path: "/spec/image", value: "registry.example.com/" + object.spec.image}]`,
		},
	})

	for _, s := range c.Servers {
		deployments := s.Clientset(t).AppsV1().Deployments("mutated")
		waitFor(t, fmt.Sprintf("the policy on server %d", s.Index), func() (bool, error) {
			d, err := deployments.Create(ctx, replicated("marker", 1), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil && *d.Spec.Replicas == 1337, err
		})
	}
	deployments := c.Servers[1].Clientset(t).AppsV1().Deployments("mutated")
	d, err := deployments.Create(ctx, replicated("web", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 1337 || d.Annotations["mutated-by"] != "admission-policy" {
		t.Errorf("created: replicas %d, annotations %v; want 1337 and the policy's annotation", *d.Spec.Replicas, d.Annotations)
	}
	d.Spec.Replicas = ptr.To[int32](3)
	d.Annotations = nil
	if d, err = deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil || *d.Spec.Replicas != 1337 || d.Annotations["mutated-by"] != "admission-policy" {
		t.Errorf("updated: %v, %+v", err, d)
	}
	if got, err := admin.AppsV1().Deployments("mutated").Get(ctx, "web", metav1.GetOptions{}); err != nil || *got.Spec.Replicas != 1337 {
		t.Errorf("stored: %v, %+v", err, got)
	}

	// The policy matches v1 CronTabs; a v2 request is converted to v1 for it and back.
	gvr := gvrOf(crd, "v2")
	var created *unstructured.Unstructured
	waitFor(t, "the CronTab policy", func() (bool, error) {
		var err error
		created, err = c.Servers[0].Dynamic(t).Resource(gvr).Namespace("mutated").Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "mutated.example.com/v2", "kind": "CronTab", "metadata": map[string]interface{}{"generateName": "tab-"},
			"spec": map[string]interface{}{"schedule": "@hourly", "image": "cron:1"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		image, _, _ := unstructured.NestedString(created.Object, "spec", "image")
		return image == "registry.example.com/cron:1", nil
	})
	if created.GetAPIVersion() != "mutated.example.com/v2" {
		t.Errorf("answered in %s, want the request's v2", created.GetAPIVersion())
	}
}

// ValidatingAdmissionPolicies are type-checked against the resources they match, custom
// and built-in, by the status controller (one of the servers, elected): their
// status.typeChecking says which validation or message expression does not type-check
// and why, for each generation (status.observedGeneration), and is empty for a policy
// that type-checks.
func TestValidatingAdmissionPolicyTypeChecking(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	crd, err := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, cronTabCRD("typed.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitServedEverywhere(t, c, gvrOf(crd, "v1"), crd.CreationTimestamp.Time)
	waitFor(t, "the CRD's OpenAPI v3 document", func() (bool, error) {
		paths, err := admin.Discovery().OpenAPIV3().Paths()
		_, ok := paths["apis/typed.example.com/v1"]
		return err == nil && ok, nil
	})
	policies := c.Servers[1].Clientset(t).AdmissionregistrationV1().ValidatingAdmissionPolicies()
	create := func(name, group, resource string, validations ...admissionregistrationv1.Validation) {
		t.Helper()
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: inNamespace("typed", group, "v1", resource), Validations: validations,
			},
		}
		if _, err := policies.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	checked := func(name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		t.Helper()
		var p *admissionregistrationv1.ValidatingAdmissionPolicy
		waitFor(t, "the type check of "+name, func() (bool, error) {
			var err error
			p, err = policies.Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.TypeChecking != nil && p.Status.ObservedGeneration == p.Generation, err
		})
		return p
	}
	create("crontabs-correct", "typed.example.com", "crontabs", admissionregistrationv1.Validation{Expression: "object.spec.replicas > 1"})
	if p := checked("crontabs-correct"); len(p.Status.TypeChecking.ExpressionWarnings) != 0 {
		t.Errorf("a policy that type-checks has warnings: %+v", p.Status.TypeChecking.ExpressionWarnings)
	}
	create("crontabs-confused", "typed.example.com", "crontabs",
		admissionregistrationv1.Validation{Expression: "object.spec.replicas > '1'"},
		admissionregistrationv1.Validation{Expression: "object.spec.maxRetries < 10"})
	p := checked("crontabs-confused")
	want := map[string]string{
		"spec.validations[0].expression": "found no matching overload for '_>_' applied to '(int, string)'",
		"spec.validations[1].expression": "undefined field 'maxRetries'",
	}
	warnings := p.Status.TypeChecking.ExpressionWarnings
	if len(warnings) != len(want) {
		t.Errorf("warnings %+v, want one for each of %v", warnings, want)
	}
	for _, w := range warnings {
		if text, ok := want[w.FieldRef]; !ok || !strings.Contains(w.Warning, text) || !strings.Contains(w.Warning, "typed.example.com/v1, Kind=CronTab") {
			t.Errorf("warning at %s: %q, want the CronTab type and %q", w.FieldRef, w.Warning, text)
		}
	}
	create("deployments-confused", "apps", "deployments", admissionregistrationv1.Validation{
		Expression: "true", MessageExpression: "object.spec.replicas + 'replicas'"})
	if w := checked("deployments-confused").Status.TypeChecking.ExpressionWarnings; len(w) != 1 || w[0].FieldRef != "spec.validations[0].messageExpression" ||
		!strings.Contains(w[0].Warning, "apps/v1, Kind=Deployment") {
		t.Errorf("a built-in resource's policy: warnings %+v, want one on the message expression of Deployments", w)
	}
	// A new generation is checked again.
	if _, err := updateRetrying(ctx, policies.Get, policies.Update, "crontabs-confused", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.Validations = p.Spec.Validations[:1]
		p.Spec.Validations[0].Expression = "object.spec.replicas > 1"
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the type check of the new generation", func() (bool, error) {
		p, err := policies.Get(ctx, "crontabs-confused", metav1.GetOptions{})
		if err != nil || p.Status.ObservedGeneration != p.Generation {
			return false, err
		}
		// The warnings the controller applied before are gone: server-side apply drops
		// the emptied typeChecking, as kube-apiserver does.
		if tc := p.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) != 0 {
			return false, fmt.Errorf("generation %d checked: %+v", p.Generation, tc)
		}
		return true, nil
	})
}

// A ValidatingAdmissionPolicy with parameters (paramKind ConfigMap, the binding's
// paramRef) and matchConditions, enforced by both servers: the limit is the parameter's
// (and follows it when it changes), objects the match condition exempts pass, and once
// the parameter is gone the binding's parameterNotFoundAction Deny refuses every write
// it matches, in Kubernetes' words.
func TestValidatingAdmissionPolicyParams(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	policyNamespace(t, admin, "limited")
	params := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "limited"}, Data: map[string]string{"maxReplicas": "3"}}
	if _, err := admin.CoreV1().ConfigMaps("limited").Create(ctx, params, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "max-replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: inNamespace("limited", "apps", "v1", "deployments"),
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "not-exempt", Expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "object.spec.replicas <= int(params.data.maxReplicas)",
				MessageExpression: "'replicas ' + string(object.spec.replicas) + ' over the limit ' + params.data.maxReplicas",
			}},
		},
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deny := admissionregistrationv1.DenyAction
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "max-replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "max-replicas",
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "limited", ParameterNotFoundAction: &deny},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	refusedWith := func(s *harness.Server, d *appsv1.Deployment, message string) func() (bool, error) {
		return func() (bool, error) {
			_, err := s.Clientset(t).AppsV1().Deployments("limited").Create(ctx, d, dry)
			if err == nil {
				return false, nil
			}
			if !strings.Contains(err.Error(), message) {
				return false, nil // an earlier state of the policy, binding or parameter
			}
			return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
		}
	}
	for _, s := range c.Servers {
		waitFor(t, fmt.Sprintf("the parameter's limit on server %d", s.Index), refusedWith(s, replicated("big", 5), "replicas 5 over the limit 3"))
		if _, err := s.Clientset(t).AppsV1().Deployments("limited").Create(ctx, replicated("small", 2), dry); err != nil {
			t.Errorf("server %d: 2 replicas under the limit 3: %v", s.Index, err)
		}
		exempt := replicated("exempt", 5)
		exempt.Labels = map[string]string{"exempt": "yes"}
		if _, err := s.Clientset(t).AppsV1().Deployments("limited").Create(ctx, exempt, dry); err != nil {
			t.Errorf("server %d: a Deployment the match condition exempts: %v", s.Index, err)
		}
	}

	// The limit follows the parameter.
	params.Data["maxReplicas"] = "10"
	if _, err := admin.CoreV1().ConfigMaps("limited").Update(ctx, params, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new limit", func() (bool, error) {
		_, err := c.Servers[1].Clientset(t).AppsV1().Deployments("limited").Create(ctx, replicated("big", 5), dry)
		return err == nil, nil
	})
	waitFor(t, "the new limit's message", refusedWith(c.Servers[1], replicated("huge", 11), "replicas 11 over the limit 10"))

	// Without the parameter, the binding denies.
	if err := admin.CoreV1().ConfigMaps("limited").Delete(ctx, "limits", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Servers {
		waitFor(t, fmt.Sprintf("parameterNotFoundAction Deny on server %d", s.Index), refusedWith(s, replicated("small", 2), "no params found for policy binding with `Deny` parameterNotFoundAction"))
	}
}

// Reviews are admitted as Kubernetes admits their creation: a ValidatingAdmissionPolicy
// matching SubjectAccessReviews refuses the review it denies (422, its message), and
// the others are answered.
func TestAdmissionOfReviews(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-questions-about-mallory"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"authorization.k8s.io"}, APIVersions: []string{"v1"},
						Resources: []string{"subjectaccessreviews"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.user != 'mallory'", Message: "no questions about mallory"}},
		},
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-questions-about-mallory"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	review := func(user string) error {
		_, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "default"},
		}}, metav1.CreateOptions{})
		return err
	}
	waitFor(t, "the policy to refuse a review", func() (bool, error) {
		err := review("mallory")
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "no questions about mallory"), nil
	})
	if err := review("alice"); err != nil {
		t.Errorf("a review the policy admits: %v", err)
	}
}
