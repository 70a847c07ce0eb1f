package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
)

// auditPolicy: configmaps of namespace audited in full, Secrets as metadata only (their
// data must never reach a log), leases not at all, the rest as metadata.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: Metadata
  resources: [{group: "", resources: [secrets]}]
- level: RequestResponse
  namespaces: [audited]
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
`

// TestAudit: a server with --audit-policy-file, --audit-log-path and
// --audit-webhook-config-file writes Kubernetes' audit events, as its policy says, to
// both backends.
func TestAudit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	policy, logPath, hookConfig := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log"), filepath.Join(dir, "webhook.kubeconfig")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := &auditHook{}
	hookServer := httptest.NewServer(hook)
	t.Cleanup(hookServer.Close) // registered before the server's: closed after it stops
	kubeconfig := "apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: " + hookServer.URL +
		"\nusers:\n- name: hook\ncontexts:\n- name: hook\n  context: {cluster: hook, user: hook}\ncurrent-context: hook\n"
	if err := os.WriteFile(hookConfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := harness.Start(t, 1, withTokens(t, rbacTokens), harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Audit.PolicyFile, o.Audit.LogPath, o.Audit.WebhookConfigFile = policy, logPath, hookConfig
		o.Audit.WebhookBatch.Mode = audit.ModeBlocking
	}))
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "audited", Labels: map[string]string{"policy-test": "audited"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("audited").Create(ctx, configMap("logged", map[string]string{"k": "v"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets("audited").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := kubernetes.NewForConfigOrDie(withToken(c.Servers[0].Config(), "alice-token"))
	if _, err := alice.CoreV1().ConfigMaps("audited").Get(ctx, "logged", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice reads: %v, want 403", err)
	}
	intruder := kubernetes.NewForConfigOrDie(withToken(c.Servers[0].Config(), "not-a-token"))
	if _, err := intruder.CoreV1().ConfigMaps("audited").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("a bad token: %v, want 401", err)
	}
	if _, err := kubernetes.NewForConfigOrDie(asUser(c.Servers[0].Config(), "bob")).CoreV1().ConfigMaps("audited").Get(ctx, "logged", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the admin as bob: %v, want 403", err)
	}

	events := readAuditLog(t, logPath)
	find := func(what string, match func(e auditv1.Event) bool) auditv1.Event {
		t.Helper()
		for _, e := range events {
			if match(e) {
				return e
			}
		}
		t.Fatalf("no audit event of %s among %d", what, len(events))
		return auditv1.Event{}
	}
	isRef := func(e auditv1.Event, resource, name string) bool {
		return e.ObjectRef != nil && e.ObjectRef.Resource == resource && e.ObjectRef.Namespace == "audited" && (name == "" || e.ObjectRef.Name == name)
	}
	created := find("the configmap's creation", func(e auditv1.Event) bool { return e.Verb == "create" && isRef(e, "configmaps", "logged") })
	if created.Level != auditv1.LevelRequestResponse || created.Stage != auditv1.StageResponseComplete || created.User.Username != "concord-admin" ||
		created.ResponseStatus.Code != http.StatusCreated || created.RequestObject == nil || !strings.Contains(string(created.ResponseObject.Raw), `"k":"v"`) {
		t.Errorf("the configmap's creation: %+v", created)
	}
	secret := find("the secret's creation", func(e auditv1.Event) bool { return e.Verb == "create" && isRef(e, "secrets", "") })
	if secret.Level != auditv1.LevelMetadata || secret.RequestObject != nil || secret.ResponseObject != nil {
		t.Errorf("the secret's creation logged its content: %+v", secret)
	}
	denied := find("alice's denied read", func(e auditv1.Event) bool { return e.User.Username == "alice" && isRef(e, "configmaps", "logged") })
	if denied.ResponseStatus.Code != http.StatusForbidden || denied.Annotations[audit.AnnotationAuthorizationDecision] != "forbid" {
		t.Errorf("alice's denied read: %+v", denied)
	}
	failed := find("the bad token", func(e auditv1.Event) bool {
		return e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusUnauthorized
	})
	if failed.Stage != auditv1.StageResponseStarted {
		t.Errorf("the bad token's event: %+v", failed)
	}
	impersonated := find("the impersonation", func(e auditv1.Event) bool { return e.ImpersonatedUser != nil })
	if impersonated.User.Username != "concord-admin" || impersonated.ImpersonatedUser.Username != "bob" {
		t.Errorf("the impersonation's event: user %+v impersonated %+v", impersonated.User, impersonated.ImpersonatedUser)
	}
	for _, e := range events {
		if e.ObjectRef != nil && e.ObjectRef.Resource == "leases" {
			t.Errorf("a lease request was audited against the policy: %+v", e.ObjectRef)
		}
		if e.Stage == auditv1.StageRequestReceived {
			t.Errorf("a RequestReceived event, which the policy omits: %s", e.RequestURI)
		}
		var bodies string
		for _, o := range []*runtime.Unknown{e.RequestObject, e.ResponseObject} {
			if o != nil {
				bodies += string(o.Raw)
			}
		}
		if strings.Contains(bodies, "aHVudGVyMg") || strings.Contains(bodies, "hunter2") {
			t.Errorf("a Secret's data in the audit log: %s", e.RequestURI)
		}
	}
	checkPolicyAnnotations(t, c.Servers[0].Clientset(t), logPath)
	if n := hook.count(created.AuditID); n == 0 {
		t.Errorf("the webhook backend did not receive the configmap creation's event (it got %d events)", hook.total())
	}
}

// readAuditLog decodes the JSON lines of an audit log. The server may be writing the
// last line as it is read: a line without its newline is left for the next read.
func readAuditLog(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditv1.Event
	for line := range bytes.Lines(data) {
		if !bytes.HasSuffix(line, []byte("\n")) {
			break // being written
		}
		var e auditv1.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("an audit log line is not an event: %v\n%s", err, line)
		}
		out = append(out, e)
	}
	return out
}

// auditHook is an audit webhook: it keeps the events it is sent.
type auditHook struct {
	mu     sync.Mutex
	events []auditv1.Event
}

func (h *auditHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var list auditv1.EventList
	if err := json.Unmarshal(body, &list); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.events = append(h.events, list.Items...)
	h.mu.Unlock()
}

func (h *auditHook) count(id types.UID) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.events {
		if e.AuditID == id {
			n++
		}
	}
	return n
}

func (h *auditHook) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events)
}

// checkPolicyAnnotations: a ValidatingAdmissionPolicy bound with the Audit action puts
// its audit annotations and its failure into the request's audit event.
func checkPolicyAnnotations(t *testing.T, admin kubernetes.Interface, logPath string) {
	ctx := t.Context()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "audit-cm"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: inNamespace("audited", "", "v1", "configmaps"),
			Validations:      []admissionregistrationv1.Validation{{Expression: "false", Message: "not liked"}},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "flag", ValueExpression: "'seen'"}},
		},
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "audit-cm"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "audit-cm", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
		},
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		name := fmt.Sprintf("probe-%d", i)
		if _, err := admin.CoreV1().ConfigMaps("audited").Create(ctx, configMap(name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the Audit action refused %s: %v", name, err)
		}
		for _, e := range readAuditLog(t, logPath) {
			if e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Name == name && e.Annotations["audit-cm/flag"] == "seen" {
				if !strings.Contains(e.Annotations["validation.policy.admission.k8s.io/validation_failure"], "not liked") {
					t.Errorf("the policy's failure is not annotated: %v", e.Annotations)
				}
				return
			}
		}
		if i == 200 {
			for _, e := range readAuditLog(t, logPath) {
				if e.ObjectRef != nil && strings.HasPrefix(e.ObjectRef.Name, "probe-") {
					t.Logf("%s %s %v", e.Verb, e.ObjectRef.Name, e.Annotations)
				}
			}
			t.Fatal("no audit event carries the policy's annotations")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
