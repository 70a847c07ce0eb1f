package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// webhookEnv is one cluster of two servers, server 0 with an audit log, and a webhook
// server, shared by the subtests of TestAdmissionWebhooks.
type webhookEnv struct {
	c     *harness.Cluster
	admin kubernetes.Interface
	hooks *webhookServer
	audit string
}

// TestAdmissionWebhooks: ValidatingWebhookConfigurations and
// MutatingWebhookConfigurations (admissionregistration.k8s.io/v1) are enforced by
// every server on writes of built-in and custom resources, calling a webhook the test
// serves over TLS (its CA in caBundle), by URL or through a Service, with
// AdmissionReview v1 (v1beta1 for a webhook that lists only that).
func TestAdmissionWebhooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [configmaps]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 0 {
			o.Audit.PolicyFile, o.Audit.LogPath = policy, logPath
		}
	}))
	env := &webhookEnv{c: c, admin: c.Servers[0].Clientset(t), hooks: startWebhookServer(t), audit: logPath}
	t.Run("validating", env.validating)
	t.Run("mutating", env.mutating)
	t.Run("reinvocation", env.reinvocation)
	t.Run("equivalent", env.equivalent)
	t.Run("selectors", env.selectors)
	t.Run("matchConditions", env.matchConditions)
	t.Run("failurePolicy", env.failurePolicy)
	t.Run("timeout", env.timeout)
	t.Run("dryRun", env.dryRun)
	t.Run("delete", env.delete)
	t.Run("policyDelete", env.policyDelete)
	t.Run("service", env.service)
	t.Run("scale", env.scale)
	t.Run("token", env.token)
	t.Run("invalid", env.invalid)
	t.Run("exempt", env.exempt)
}

// createValidating creates a ValidatingWebhookConfiguration of hooks.
func (e *webhookEnv) createValidating(t *testing.T, name string, hooks ...admissionregistrationv1.ValidatingWebhook) {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
	if _, err := e.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createMutating creates a MutatingWebhookConfiguration of hooks.
func (e *webhookEnv) createMutating(t *testing.T, name string, hooks ...admissionregistrationv1.MutatingWebhook) {
	t.Helper()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
	if _, err := e.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(t.Context(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// onEveryServer waits until probe, run with each server's client, reports that the
// configurations it depends on are in effect there.
func (e *webhookEnv) onEveryServer(t *testing.T, what string, probe func(cs kubernetes.Interface) (bool, error)) {
	t.Helper()
	for _, s := range e.c.Servers {
		cs := s.Clientset(t)
		waitFor(t, fmt.Sprintf("%s on server %d", what, s.Index), func() (bool, error) { return probe(cs) })
	}
}

// deniedWith reports whether err is a refusal of code whose message has text.
func deniedWith(err error, code int32, text string) bool {
	var status apierrors.APIStatus
	return errorsAs(err, &status) && status.Status().Code == code && strings.Contains(status.Status().Message, text)
}

// validating: a webhook's denial reaches the client with its code and message, as
// "admission webhook <name> denied the request: ..."; its warnings and audit
// annotations go to the client and the audit log; an allowed write is stored; a
// webhook listing only v1beta1 is sent an AdmissionReview v1beta1.
func (e *webhookEnv) validating(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-validating", "validating", nil)
	e.hooks.handle("/deny", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		if err := json.Unmarshal(req.Object.Raw, &cm); err != nil || cm.Data["verdict"] != "no" {
			return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"checked by the test webhook"}, AuditAnnotations: map[string]string{"verdict": "yes"}}
		}
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: "verdict no is refused"}}
	})
	e.hooks.handle("/v1beta1", allow)
	old := hookIn(e.hooks, "old.example.com", "/v1beta1", "validating", nil, "configmaps")
	old.AdmissionReviewVersions = []string{"v1beta1"}
	e.createValidating(t, "validating", hookIn(e.hooks, "deny.example.com", "/deny", "validating", nil, "configmaps"), old)

	refused := configMap("refused", map[string]string{"verdict": "no"})
	e.onEveryServer(t, "the validating webhook", func(cs kubernetes.Interface) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("wh-validating").Create(ctx, refused, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	_, err := e.c.Servers[1].Clientset(t).CoreV1().ConfigMaps("wh-validating").Create(ctx, refused, metav1.CreateOptions{})
	if !deniedWith(err, http.StatusUnprocessableEntity, `admission webhook "deny.example.com" denied the request: verdict no is refused`) {
		t.Fatalf("a refused ConfigMap: %v", err)
	}
	seen := &warnings{}
	cfg := rest.CopyConfig(e.c.Servers[0].Config())
	cfg.WarningHandlerWithContext = seen
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("wh-validating").Create(ctx, configMap("allowed", map[string]string{"verdict": "yes"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("an allowed ConfigMap: %v", err)
	}
	if !strings.Contains(seen.all(), "checked by the test webhook") {
		t.Errorf("warnings %q, want the webhook's", seen.all())
	}
	if _, err := e.c.Servers[1].Clientset(t).CoreV1().ConfigMaps("wh-validating").Get(ctx, "allowed", metav1.GetOptions{}); err != nil {
		t.Errorf("the allowed ConfigMap: %v", err)
	}
	for _, r := range e.hooks.reviews("/v1beta1") {
		if r.apiVersion != "admission.k8s.io/v1beta1" {
			t.Errorf("the v1beta1 webhook was sent %s", r.apiVersion)
		}
	}
	for _, r := range e.hooks.reviews("/deny") {
		if r.apiVersion != "admission.k8s.io/v1" || r.request.Kind.Kind != "ConfigMap" || r.request.Namespace != "wh-validating" || r.request.UserInfo.Username == "" {
			t.Errorf("the v1 webhook was sent %s of %+v in %q by %q", r.apiVersion, r.request.Kind, r.request.Namespace, r.request.UserInfo.Username)
		}
	}
	metrics, err := e.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil || !strings.Contains(string(metrics), `apiserver_admission_webhook_admission_duration_seconds_count{`) || !strings.Contains(string(metrics), `name="deny.example.com"`) {
		t.Errorf("/metrics lacks the webhook's apiserver_admission_webhook_admission_duration_seconds (%v)", err)
	}
	waitFor(t, "the webhook's audit annotation", func() (bool, error) {
		for _, ev := range readAuditLog(t, e.audit) {
			if ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Name == "allowed" && ev.Annotations["deny.example.com/verdict"] == "yes" {
				return true, nil
			}
		}
		return false, nil
	})
}

// mutating: a webhook's JSONPatch changes what is stored, and both servers read it.
func (e *webhookEnv) mutating(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-mutating", "mutating", nil)
	e.hooks.handle("/label", func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return jsonPatch(`[{"op":"add","path":"/metadata/labels","value":{"mutated-by":"webhook"}},{"op":"add","path":"/data/added","value":"yes"}]`)
	})
	e.createMutating(t, "mutating", mutatingHookIn(e.hooks, "label.example.com", "/label", "mutating", "configmaps"))
	e.onEveryServer(t, "the mutating webhook", func(cs kubernetes.Interface) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("wh-mutating").Create(ctx, configMap("probe", map[string]string{"k": "v"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && cm.Labels["mutated-by"] == "webhook", err
	})
	created, err := e.c.Servers[1].Clientset(t).CoreV1().ConfigMaps("wh-mutating").Create(ctx, configMap("patched", map[string]string{"k": "v"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Labels["mutated-by"] != "webhook" || created.Data["added"] != "yes" {
		t.Errorf("created %+v, want the webhook's label and data", created)
	}
	got, err := e.admin.CoreV1().ConfigMaps("wh-mutating").Get(ctx, "patched", metav1.GetOptions{})
	if err != nil || got.Labels["mutated-by"] != "webhook" || got.Data["added"] != "yes" {
		t.Errorf("server 0 reads %v, %+v", err, got)
	}
}

// reinvocation: a webhook (and a MutatingAdmissionPolicy) with reinvocationPolicy
// IfNeeded runs again once a later webhook has changed the object.
func (e *webhookEnv) reinvocation(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-reinvocation", "reinvocation", map[string]string{"policy-test": "wh-reinvocation"})
	sawSecond := func(req *admissionv1.AdmissionRequest) string {
		var cm corev1.ConfigMap
		_ = json.Unmarshal(req.Object.Raw, &cm)
		if v, ok := cm.Annotations["second"]; ok {
			return v
		}
		return "none"
	}
	e.hooks.handle("/first", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return jsonPatch(fmt.Sprintf(`[{"op":"add","path":"/data/first-saw","value":%q}]`, sawSecond(req)))
	})
	e.hooks.handle("/second", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return jsonPatch(`[{"op":"add","path":"/metadata/annotations","value":{"second":"done"}}]`)
	})
	first := mutatingHookIn(e.hooks, "first.example.com", "/first", "reinvocation", "configmaps")
	first.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
	e.createMutating(t, "reinvocation", first, mutatingHookIn(e.hooks, "second.example.com", "/second", "reinvocation", "configmaps"))
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "reinvoked"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   inNamespace("wh-reinvocation", "", "v1", "configmaps"),
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{data: {"policy-saw": has(object.metadata.annotations) && "second" in object.metadata.annotations ? object.metadata.annotations["second"] : "none"}}`}}},
		},
	}
	if _, err := e.admin.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "reinvoked"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "reinvoked"}}
	if _, err := e.admin.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.onEveryServer(t, "the webhooks and the policy", func(cs kubernetes.Interface) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("wh-reinvocation").Create(ctx, configMap("probe", map[string]string{"k": "v"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && cm.Annotations["second"] == "done" && cm.Data["policy-saw"] == "done", err
	})
	before := len(e.hooks.reviews("/first"))
	cm, err := e.c.Servers[1].Clientset(t).CoreV1().ConfigMaps("wh-reinvocation").Create(ctx, configMap("twice", map[string]string{"k": "v"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["first-saw"] != "done" || cm.Data["policy-saw"] != "done" {
		t.Errorf("data %v: the first webhook and the policy must have been run again after the second webhook", cm.Data)
	}
	if n := len(e.hooks.reviews("/first")) - before; n != 2 {
		t.Errorf("the IfNeeded webhook was called %d times for one creation, want 2", n)
	}
}

// equivalent: a webhook that knows only v1 of a custom resource, with matchPolicy
// Equivalent, is sent a v2 request converted to v1, and its patch is applied to the
// object answered in v2; with matchPolicy Exact it is not called for v2.
func (e *webhookEnv) equivalent(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-equivalent", "equivalent", nil)
	crd, err := crdClient(t, e.c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, cronTabCRD("hooked.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitServedEverywhere(t, e.c, gvrOf(crd, "v2"), crd.CreationTimestamp.Time)
	e.hooks.handle("/image", func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return jsonPatch(`[{"op":"add","path":"/spec/image","value":"set-by-webhook"}]`)
	})
	e.hooks.handle("/exact", allow)
	cronTabs := func(name, path string, policy admissionregistrationv1.MatchPolicyType) admissionregistrationv1.MutatingWebhook {
		h := mutatingHookIn(e.hooks, name, path, "equivalent")
		h.Rules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"hooked.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"crontabs"}}
		h.MatchPolicy = ptr.To(policy)
		return h
	}
	e.createMutating(t, "equivalent", cronTabs("image.example.com", "/image", admissionregistrationv1.Equivalent), cronTabs("exact.example.com", "/exact", admissionregistrationv1.Exact))
	cronTab := func(version, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "hooked.example.com/" + version, "kind": "CronTab", "metadata": map[string]interface{}{"name": name},
			"spec": map[string]interface{}{"image": "cron:1"},
		}}
	}
	for _, s := range e.c.Servers {
		dyn := s.Dynamic(t).Resource(gvrOf(crd, "v2")).Namespace("wh-equivalent")
		waitFor(t, fmt.Sprintf("the webhook on server %d", s.Index), func() (bool, error) {
			got, err := dyn.Create(ctx, cronTab("v2", "probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			image, _, _ := unstructured.NestedString(got.Object, "spec", "image")
			return err == nil && image == "set-by-webhook", err
		})
	}
	exactBefore := len(e.hooks.reviews("/exact"))
	got, err := e.c.Servers[1].Dynamic(t).Resource(gvrOf(crd, "v2")).Namespace("wh-equivalent").Create(ctx, cronTab("v2", "converted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if image, _, _ := unstructured.NestedString(got.Object, "spec", "image"); got.GetAPIVersion() != "hooked.example.com/v2" || image != "set-by-webhook" {
		t.Errorf("answered %s with image %q, want v2 patched by the webhook", got.GetAPIVersion(), image)
	}
	reviews := e.hooks.reviews("/image")
	last := reviews[len(reviews)-1].request
	var sent unstructured.Unstructured
	if err := json.Unmarshal(last.Object.Raw, &sent.Object); err != nil {
		t.Fatal(err)
	}
	if last.Kind.Version != "v1" || last.RequestKind.Version != "v2" || last.Resource.Version != "v1" || sent.GetAPIVersion() != "hooked.example.com/v1" {
		t.Errorf("the webhook was sent kind %v (request kind %v, resource %v), object %s; want v1 converted from v2", last.Kind, last.RequestKind, last.Resource, sent.GetAPIVersion())
	}
	if n := len(e.hooks.reviews("/exact")) - exactBefore; n != 0 {
		t.Errorf("the Exact webhook of v1 was called %d times for a v2 request", n)
	}
	if _, err := e.c.Servers[0].Dynamic(t).Resource(gvrOf(crd, "v1")).Namespace("wh-equivalent").Create(ctx, cronTab("v1", "exact"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.hooks.reviews("/exact")) - exactBefore; n != 1 {
		t.Errorf("the Exact webhook of v1 was called %d times for a v1 request, want 1", n)
	}
}

// selectors: a webhook is called only for objects whose namespace and labels its
// namespaceSelector and objectSelector match.
func (e *webhookEnv) selectors(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-guarded", "selectors", map[string]string{"env": "guarded"})
	webhookNamespace(t, e.admin, "wh-open", "selectors", nil)
	e.hooks.handle("/selected", deny(http.StatusForbidden, "selected"))
	h := hookIn(e.hooks, "selected.example.com", "/selected", "selectors", nil, "configmaps")
	h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "guarded"}}
	h.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"guard": "yes"}}
	e.createValidating(t, "selectors", h)
	guarded := configMap("guarded", nil)
	guarded.Labels = map[string]string{"guard": "yes"}
	e.onEveryServer(t, "the selected webhook", func(cs kubernetes.Interface) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("wh-guarded").Create(ctx, guarded, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return deniedWith(err, http.StatusForbidden, "selected"), nil
	})
	cms := e.c.Servers[1].Clientset(t).CoreV1()
	if _, err := cms.ConfigMaps("wh-guarded").Create(ctx, configMap("unlabelled", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("an object the objectSelector does not match: %v", err)
	}
	if _, err := cms.ConfigMaps("wh-open").Create(ctx, guarded, metav1.CreateOptions{}); err != nil {
		t.Errorf("a namespace the namespaceSelector does not match: %v", err)
	}
	if _, err := cms.ConfigMaps("wh-guarded").Create(ctx, guarded, metav1.CreateOptions{}); !deniedWith(err, http.StatusForbidden, "selected") {
		t.Errorf("both selectors match: %v, want the webhook's 403", err)
	}
}

// matchConditions: a webhook is called only for requests its CEL match conditions
// accept.
func (e *webhookEnv) matchConditions(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-conditions", "matchConditions", nil)
	e.hooks.handle("/conditional", deny(http.StatusForbidden, "matched"))
	h := hookIn(e.hooks, "conditional.example.com", "/conditional", "matchConditions", nil, "configmaps")
	h.MatchConditions = []admissionregistrationv1.MatchCondition{
		{Name: "named-deny", Expression: `object.metadata.name.startsWith("deny-")`},
		{Name: "not-anonymous", Expression: `request.userInfo.username != "system:anonymous"`},
	}
	e.createValidating(t, "conditions", h)
	e.onEveryServer(t, "the conditional webhook", func(cs kubernetes.Interface) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("wh-conditions").Create(ctx, configMap("deny-probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return deniedWith(err, http.StatusForbidden, "matched"), nil
	})
	before := len(e.hooks.reviews("/conditional"))
	if _, err := e.admin.CoreV1().ConfigMaps("wh-conditions").Create(ctx, configMap("other", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("a name the conditions do not match: %v", err)
	}
	if n := len(e.hooks.reviews("/conditional")) - before; n != 0 {
		t.Errorf("the webhook was called %d times for a request its conditions exclude", n)
	}
}

// failurePolicy: a webhook that cannot be called (nothing listens; or a certificate
// its caBundle does not trust) fails the request under failurePolicy Fail, with
// Kubernetes' error, and is skipped under Ignore.
func (e *webhookEnv) failurePolicy(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-fail", "failFail", nil)
	webhookNamespace(t, e.admin, "wh-untrusted", "untrusted", nil)
	webhookNamespace(t, e.admin, "wh-ignore", "failIgnore", nil)
	gone := httptest.NewUnstartedServer(http.NotFoundHandler())
	goneURL := "https://" + gone.Listener.Addr().String() + "/gone"
	gone.Close()
	down := func(name, scenario string, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
		h := hookIn(e.hooks, name, "/", scenario, nil, "configmaps")
		h.ClientConfig.URL, h.FailurePolicy = ptr.To(goneURL), ptr.To(policy)
		return h
	}
	untrusted := hookIn(e.hooks, "untrusted.example.com", "/untrusted", "untrusted", nil, "configmaps")
	untrusted.ClientConfig.CABundle = startWebhookServer(t).ca // another CA's
	e.hooks.handle("/untrusted", allow)
	e.createValidating(t, "failure", down("down-fail.example.com", "failFail", admissionregistrationv1.Fail),
		down("down-ignore.example.com", "failIgnore", admissionregistrationv1.Ignore), untrusted)
	e.onEveryServer(t, "the unreachable webhook", func(cs kubernetes.Interface) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("wh-fail").Create(ctx, configMap("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	cms := e.c.Servers[1].Clientset(t).CoreV1()
	_, err := cms.ConfigMaps("wh-fail").Create(ctx, configMap("failed", nil), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "down-fail.example.com"`) {
		t.Errorf("failurePolicy Fail: %v, want Kubernetes' 500 naming the webhook", err)
	}
	_, err = cms.ConfigMaps("wh-untrusted").Create(ctx, configMap("failed", nil), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "untrusted.example.com"`) || !strings.Contains(err.Error(), "x509") {
		t.Errorf("a webhook whose certificate the caBundle does not sign: %v, want a 500 naming the webhook and x509", err)
	}
	if _, err := cms.ConfigMaps("wh-ignore").Create(ctx, configMap("ignored", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("failurePolicy Ignore: %v", err)
	}
}

// timeout: a webhook that never answers is given up after its timeoutSeconds: the
// request returns promptly, refused under Fail with Kubernetes' error, admitted under
// Ignore.
func (e *webhookEnv) timeout(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-hang", "hang", nil)
	webhookNamespace(t, e.admin, "wh-hang-ignored", "hangIgnored", nil)
	hang := func(name, scenario string, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
		h := hookIn(e.hooks, name, "/hang", scenario, nil, "configmaps")
		h.TimeoutSeconds, h.FailurePolicy = ptr.To[int32](1), ptr.To(policy)
		return h
	}
	e.createValidating(t, "hang", hang("hang.example.com", "hang", admissionregistrationv1.Fail), hang("hang-ignored.example.com", "hangIgnored", admissionregistrationv1.Ignore))
	e.onEveryServer(t, "the hanging webhook", func(cs kubernetes.Interface) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("wh-hang").Create(ctx, configMap("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	start := time.Now()
	_, err := e.c.Servers[1].Clientset(t).CoreV1().ConfigMaps("wh-hang").Create(ctx, configMap("hung", nil), metav1.CreateOptions{})
	took := time.Since(start)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "hang.example.com"`) || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("a hanging webhook under Fail: %v, want Kubernetes' 500 (deadline exceeded)", err)
	}
	if took < time.Second || took > 10*time.Second {
		t.Errorf("a webhook of timeoutSeconds 1 held the request %v", took)
	}
	start = time.Now()
	if _, err := e.admin.CoreV1().ConfigMaps("wh-hang-ignored").Create(ctx, configMap("admitted", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("a hanging webhook under Ignore: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a webhook of timeoutSeconds 1 under Ignore held the request %v", took)
	}
}

// dryRun: a webhook without side effects on dry runs is called for a dry run, told
// it is one, and nothing is stored.
func (e *webhookEnv) dryRun(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-dryrun", "dryRun", nil)
	e.hooks.handle("/dry", allow)
	h := hookIn(e.hooks, "dry.example.com", "/dry", "dryRun", nil, "configmaps")
	h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
	e.createValidating(t, "dryrun", h)
	e.onEveryServer(t, "the dry-run webhook", func(cs kubernetes.Interface) (bool, error) {
		before := len(e.hooks.reviews("/dry"))
		_, err := cs.CoreV1().ConfigMaps("wh-dryrun").Create(ctx, configMap("dry", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && len(e.hooks.reviews("/dry")) > before, err
	})
	reviews := e.hooks.reviews("/dry")
	if last := reviews[len(reviews)-1].request; last.DryRun == nil || !*last.DryRun {
		t.Errorf("the webhook was not told of the dry run: %v", last.DryRun)
	}
	if _, err := e.admin.CoreV1().ConfigMaps("wh-dryrun").Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the dry run stored the object: %v", err)
	}
}

// delete: deletions are admitted, the webhook sent the object as stored as
// oldObject; a refused deletion deletes nothing; so is a deletion of a collection,
// object by object.
func (e *webhookEnv) delete(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-delete", "delete", nil)
	e.hooks.handle("/protect", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		if req.Object.Raw != nil || json.Unmarshal(req.OldObject.Raw, &cm) != nil {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "a deletion must carry only the old object"}}
		}
		if cm.Labels["protect"] == "true" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: cm.Name + " is protected"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	e.createValidating(t, "delete", hookIn(e.hooks, "protect.example.com", "/protect", "delete", []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, "configmaps"))
	cms := e.admin.CoreV1().ConfigMaps("wh-delete")
	protected := configMap("protected", nil)
	protected.Labels = map[string]string{"protect": "true"}
	for _, cm := range []*corev1.ConfigMap{protected, configMap("free", nil)} {
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.onEveryServer(t, "the deletion webhook", func(cs kubernetes.Interface) (bool, error) {
		err := cs.CoreV1().ConfigMaps("wh-delete").Delete(ctx, "protected", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return deniedWith(err, http.StatusForbidden, "protected is protected"), nil
	})
	if err := e.c.Servers[1].Clientset(t).CoreV1().ConfigMaps("wh-delete").Delete(ctx, "free", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting an unprotected ConfigMap: %v", err)
	}
	err := e.c.Servers[1].Clientset(t).CoreV1().ConfigMaps("wh-delete").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	if !deniedWith(err, http.StatusForbidden, "protected is protected") {
		t.Errorf("deleting the collection: %v, want the webhook's 403", err)
	}
	if _, err := cms.Get(ctx, "protected", metav1.GetOptions{}); err != nil {
		t.Errorf("the protected ConfigMap after refused deletions: %v", err)
	}
	for _, r := range e.hooks.reviews("/protect") {
		if r.request.Operation != admissionv1.Delete || r.request.Options.Raw == nil {
			t.Errorf("the webhook was sent %s with options %s", r.request.Operation, r.request.Options.Raw)
		}
	}
}

// service: a webhook named by a Service reference is called at the endpoint of the
// Service's EndpointSlice, its certificate verified for <service>.<namespace>.svc.
func (e *webhookEnv) service(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-service", "service", nil)
	e.hooks.register(t, e.admin)
	e.hooks.handle("/by-service", deny(http.StatusForbidden, "refused through the service"))
	h := hookIn(e.hooks, "service.example.com", "/by-service", "service", nil, "configmaps")
	h.ClientConfig = admissionregistrationv1.WebhookClientConfig{CABundle: e.hooks.ca,
		Service: &admissionregistrationv1.ServiceReference{Namespace: "webhooks", Name: "hooks", Path: ptr.To("/by-service")}}
	e.createValidating(t, "service", h)
	e.onEveryServer(t, "the webhook behind a Service", func(cs kubernetes.Interface) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("wh-service").Create(ctx, configMap("probe", nil), metav1.CreateOptions{})
		return deniedWith(err, http.StatusForbidden, "refused through the service"), nil
	})
}

// scale: a write of the scale subresource is admitted with the Scale (autoscaling/v1)
// as its object, subresource scale.
func (e *webhookEnv) scale(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-scale", "scale", nil)
	e.hooks.handle("/scale", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var s autoscalingv1.Scale
		if err := json.Unmarshal(req.Object.Raw, &s); err != nil || req.Kind.Kind != "Scale" || req.SubResource != "scale" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: fmt.Sprintf("not a Scale: %s %v", req.Kind, err)}}
		}
		if s.Spec.Replicas > 5 {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "at most 5 replicas"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	h := hookIn(e.hooks, "scale.example.com", "/scale", "scale", []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, "deployments/scale")
	h.Rules[0].APIGroups = []string{"apps"}
	e.createValidating(t, "scale", h)
	if _, err := e.admin.AppsV1().Deployments("wh-scale").Create(ctx, replicated("web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scaleTo := func(cs kubernetes.Interface, n int32) error {
		_, err := cs.AppsV1().Deployments("wh-scale").UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "wh-scale"}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}, metav1.UpdateOptions{})
		return err
	}
	e.onEveryServer(t, "the scale webhook", func(cs kubernetes.Interface) (bool, error) {
		return deniedWith(scaleTo(cs, 9), http.StatusForbidden, "at most 5 replicas"), nil
	})
	if err := scaleTo(e.c.Servers[1].Clientset(t), 3); err != nil {
		t.Fatalf("scaling to 3: %v", err)
	}
	d, err := e.admin.AppsV1().Deployments("wh-scale").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 3 {
		t.Fatalf("after scaling: %v, %+v", err, d)
	}
	// The status subresource is admitted with the whole object.
	e.hooks.handle("/status", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var got appsv1.Deployment
		if err := json.Unmarshal(req.Object.Raw, &got); err != nil || req.SubResource != "status" || got.Spec.Replicas == nil {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: fmt.Sprintf("not a Deployment's status: %v", err)}}
		}
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "status is read-only here"}}
	})
	status := hookIn(e.hooks, "status.example.com", "/status", "scale", []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, "deployments/status")
	status.Rules[0].APIGroups = []string{"apps"}
	e.createValidating(t, "status", status)
	d.Status.ObservedGeneration = 7
	e.onEveryServer(t, "the status webhook", func(cs kubernetes.Interface) (bool, error) {
		_, err := cs.AppsV1().Deployments("wh-scale").UpdateStatus(ctx, d, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return deniedWith(err, http.StatusForbidden, "status is read-only here"), nil
	})
}

// exempt: webhooks never see webhook configurations, policies or bindings, so that a
// webhook cannot lock them.
func (e *webhookEnv) exempt(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-exempt", "exempt", nil)
	e.hooks.handle("/lock", deny(http.StatusForbidden, "locked"))
	// It matches everything of admissionregistration.k8s.io (cluster-scoped: the
	// namespace selector does not apply), and ConfigMaps, to show it is in effect.
	h := hookIn(e.hooks, "lock.example.com", "/lock", "exempt", []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}, "configmaps")
	h.Rules = append(h.Rules, admissionregistrationv1.RuleWithOperations{Operations: h.Rules[0].Operations,
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"admissionregistration.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"*"}}})
	e.createValidating(t, "lock", h)
	e.onEveryServer(t, "the locking webhook", func(cs kubernetes.Interface) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("wh-exempt").Create(ctx, configMap("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return deniedWith(err, http.StatusForbidden, "locked"), nil
	})
	calledBefore := len(e.hooks.reviews("/lock"))
	for _, s := range e.c.Servers {
		arv1 := s.Clientset(t).AdmissionregistrationV1()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			w, err := arv1.ValidatingWebhookConfigurations().Get(ctx, "lock", metav1.GetOptions{})
			if err != nil {
				return err
			}
			w.Labels = map[string]string{"touched-by": fmt.Sprint(s.Index)}
			_, err = arv1.ValidatingWebhookConfigurations().Update(ctx, w, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Errorf("server %d: updating a webhook configuration a webhook denies: %v", s.Index, err)
		}
	}
	if err := e.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "lock", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting it: %v", err)
	}
	if n := len(e.hooks.reviews("/lock")) - calledBefore; n != 0 {
		t.Errorf("the webhook was called %d times for admission configurations", n)
	}
}

// invalid: configurations Kubernetes refuses are refused, 422, with its field paths
// and words; so is a match condition that does not compile, with the compiler's
// message. (A CA bundle that holds no certificate is not refused: kube finds it
// only when it calls the webhook.) The defaults are kube-apiserver's.
func (e *webhookEnv) invalid(t *testing.T) {
	ctx := t.Context()
	cases := []struct {
		name   string
		change func(h *admissionregistrationv1.ValidatingWebhook)
		want   string
	}{
		{"http", func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr.To("http://127.0.0.1/") },
			`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme`},
		{"query", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.URL = ptr.To("https://127.0.0.1/?x=y")
		},
			`webhooks[0].clientConfig.url: Invalid value: "x=y": query parameters are not permitted in the URL`},
		{"both", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "a", Name: "b"}
		}, `webhooks[0].clientConfig: Required value: exactly one of url or service is required`},
		{"cel", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "broken", Expression: "object.metadata.name == "}}
		}, `webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name ==": compilation failed: ERROR: <input>:1:`},
		{"side-effects", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		},
			`webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`},
		{"no-side-effects", func(h *admissionregistrationv1.ValidatingWebhook) { h.SideEffects = nil },
			`webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun`},
		{"timeout", func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr.To[int32](31) },
			`webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds`},
		{"review-versions", func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v2"} },
			`webhooks[0].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1`},
		{"name", func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "unqualified" },
			`webhooks[0].name: Invalid value: "unqualified": should be a domain with at least three segments separated by dots`},
		{"rules", func(h *admissionregistrationv1.ValidatingWebhook) { h.Rules[0].Resources = []string{"*", "pods"} },
			`webhooks[0].rules[0].resources: Invalid value: ["*","pods"]: if '*' is present, must not specify other resources without subresources`},
	}
	for _, tc := range cases {
		h := hookIn(e.hooks, "valid.example.com", "/", "invalid", nil, "configmaps")
		tc.change(&h)
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "invalid-" + tc.name}, Webhooks: []admissionregistrationv1.ValidatingWebhook{h}}
		_, err := e.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want 422 with %q", tc.name, err, tc.want)
		}
	}
	dup := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "invalid-duplicate"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{mutatingHookIn(e.hooks, "a.example.com", "/", "invalid"), mutatingHookIn(e.hooks, "a.example.com", "/", "invalid")}}
	dup.Webhooks[1].ReinvocationPolicy = ptr.To(admissionregistrationv1.ReinvocationPolicyType("Sometimes"))
	_, err := e.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, dup, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `webhooks[1].name: Duplicate value: "a.example.com"`) ||
		!strings.Contains(err.Error(), `webhooks[1].reinvocationPolicy: Unsupported value: "Sometimes"`) {
		t.Errorf("duplicate names and a bad reinvocationPolicy: %v", err)
	}
	created, err := e.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "defaulted"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "d.example.com", SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "webhooks", Name: "none"}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	table := getTable(t, e.c.Servers[1], "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations")
	if cells := tableCells(t, table, "defaulted"); cells["Webhooks"] != float64(1) || cells["Age"] == "" || len(table.ColumnDefinitions) != 3 {
		t.Errorf("kubectl's columns NAME WEBHOOKS AGE: %+v %v", table.ColumnDefinitions, cells)
	}
	if w := created.Webhooks[0]; *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || w.NamespaceSelector == nil ||
		w.ObjectSelector == nil || *w.TimeoutSeconds != 10 || *w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || *w.ClientConfig.Service.Port != 443 {
		t.Errorf("defaults: %+v", w)
	}
}

// policyDelete: ValidatingAdmissionPolicies admit deletions too, with the object as
// stored as oldObject.
func (e *webhookEnv) policyDelete(t *testing.T) {
	ctx := t.Context()
	policyNamespace(t, e.admin, "policy-delete")
	match := inNamespace("policy-delete", "", "v1", "configmaps")
	match.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "keep"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: match,
			Validations: []admissionregistrationv1.Validation{{Expression: `object == null && (!has(oldObject.data) || !("keep" in oldObject.data))`,
				MessageExpression: `oldObject.metadata.name + " is kept"`}},
		},
	}
	if _, err := e.admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "keep"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "keep", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	if _, err := e.admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := e.admin.CoreV1().ConfigMaps("policy-delete")
	for _, cm := range []*corev1.ConfigMap{configMap("kept", map[string]string{"keep": "yes"}), configMap("gone", nil)} {
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.onEveryServer(t, "the policy on deletions", func(cs kubernetes.Interface) (bool, error) {
		err := cs.CoreV1().ConfigMaps("policy-delete").Delete(ctx, "kept", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "kept is kept"), nil
	})
	if err := e.c.Servers[1].Clientset(t).CoreV1().ConfigMaps("policy-delete").Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Errorf("a deletion the policy allows: %v", err)
	}
	if _, err := cms.Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("the kept ConfigMap: %v", err)
	}
}

// token: a TokenRequest (the token subresource of a ServiceAccount) is admitted before
// the token is issued, as its own kind, named as the ServiceAccount.
func (e *webhookEnv) token(t *testing.T) {
	ctx := t.Context()
	webhookNamespace(t, e.admin, "wh-token", "token", nil)
	e.hooks.handle("/token", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var tr authenticationv1.TokenRequest
		if err := json.Unmarshal(req.Object.Raw, &tr); err != nil || req.Kind.Kind != "TokenRequest" || req.SubResource != "token" || req.Name != "robot" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: fmt.Sprintf("not robot's TokenRequest: %s %s %v", req.Kind, req.Name, err)}}
		}
		if slices.Contains(tr.Spec.Audiences, "forbidden") {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "no tokens for that audience"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	h := hookIn(e.hooks, "token.example.com", "/token", "token", []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, "serviceaccounts/token")
	e.createValidating(t, "token", h)
	if _, err := e.admin.CoreV1().ServiceAccounts("wh-token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	request := func(cs kubernetes.Interface, audience string) error {
		_, err := cs.CoreV1().ServiceAccounts("wh-token").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}}}, metav1.CreateOptions{})
		return err
	}
	e.onEveryServer(t, "the token webhook", func(cs kubernetes.Interface) (bool, error) {
		return deniedWith(request(cs, "forbidden"), http.StatusForbidden, "no tokens for that audience"), nil
	})
	if err := request(e.c.Servers[1].Clientset(t), "allowed"); err != nil {
		t.Errorf("a token the webhook allows: %v", err)
	}
}
