package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/kubernetes"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// asUser is cfg impersonating user in groups (client-go's Impersonate, as kubectl
// --as and --as-group).
func asUser(cfg *rest.Config, user string, groups ...string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return c
}

// do sends one request with cfg's credentials and returns the response, its body
// read.
func do(t *testing.T, cfg *rest.Config, method, path string, body io.Reader) (*http.Response, string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, cfg.Host+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// classifiedAs reports the FlowSchema and priority level UIDs a response names.
func classifiedAs(resp *http.Response) (flowSchema, priorityLevel string) {
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID),
		resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
}

// A new cluster holds the bootstrap configuration of API priority and fairness, each
// FlowSchema's Dangling condition written by the servers; requests are classified by
// the FlowSchemas users add (the user after impersonation), the answer names the
// FlowSchema and priority level, /metrics reports each level's seats; a level with
// no seats to spare answers 429 with Retry-After while a request holds its seat.
func TestPriorityAndFairness(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	s := c.Servers[0]
	fc := s.Clientset(t).FlowcontrolV1()
	ctx := t.Context()

	for _, fs := range append(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas...) {
		waitFor(t, "FlowSchema "+fs.Name+" not dangling", func() (bool, error) {
			got, err := fc.FlowSchemas().Get(ctx, fs.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
				t.Fatalf("FlowSchema %s: annotations %v, want autoupdate-spec true", fs.Name, got.Annotations)
			}
			return danglingIs(got, flowcontrolv1.ConditionFalse), nil
		})
	}
	for _, pl := range append(bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations...) {
		if _, err := fc.PriorityLevelConfigurations().Get(ctx, pl.Name, metav1.GetOptions{}); err != nil {
			t.Fatalf("bootstrap priority level %s: %v", pl.Name, err)
		}
	}

	// Administrators are exempt, and so are probes.
	exempt, err := fc.FlowSchemas().Get(ctx, flowcontrolv1.FlowSchemaNameExempt, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	probes, err := fc.FlowSchemas().Get(ctx, "probes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := do(t, s.Config(), http.MethodGet, "/api/v1/namespaces", nil); func() bool { fs, _ := classifiedAs(resp); return fs != string(exempt.UID) }() {
		t.Errorf("the administrator's request was not classified as exempt: %v", resp.Header)
	}
	anonymous := rest.AnonymousClientConfig(s.Config())
	if resp, _ := do(t, anonymous, http.MethodGet, "/readyz", nil); func() bool { fs, _ := classifiedAs(resp); return fs != string(probes.UID) }() {
		t.Errorf("an anonymous probe was not classified by the probes FlowSchema: %v", resp.Header)
	}

	level := createLevel(t, fc.PriorityLevelConfigurations(), "e2e-level", 1, flowcontrolv1.LimitResponse{
		Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 1, QueueLengthLimit: 10}})
	flow := createFlow(t, fc.FlowSchemas(), "e2e-flow", 1000, "e2e-level", "noxu")
	waitFor(t, "e2e-flow not dangling", func() (bool, error) {
		got, err := fc.FlowSchemas().Get(ctx, flow.Name, metav1.GetOptions{})
		return err == nil && danglingIs(got, flowcontrolv1.ConditionFalse), err
	})
	// Each server classifies by the same configuration, each read on its own.
	for _, srv := range c.Servers {
		waitFor(t, "noxu classified by e2e-flow", func() (bool, error) {
			resp, _ := do(t, asUser(srv.Config(), "noxu", "system:authenticated"), http.MethodGet, "/version", nil)
			gotFS, gotPL := classifiedAs(resp)
			return gotFS == string(flow.UID) && gotPL == string(level.UID), nil
		})
	}
	resp, _ := do(t, asUser(s.Config(), "foo"), http.MethodGet, "/version", nil)
	if gotFS, gotPL := classifiedAs(resp); gotFS == "" || gotPL == "" || gotFS == string(flow.UID) {
		t.Errorf("foo classified by FlowSchema %q, priority level %q: want another, named", gotFS, gotPL)
	}
	waitFor(t, "/metrics to report e2e-level's seats", func() (bool, error) {
		_, body := do(t, s.Config(), http.MethodGet, "/metrics", nil)
		return strings.Contains(body, `apiserver_flowcontrol_nominal_limit_seats{priority_level="e2e-level"}`), nil
	})

	t.Run("rejected when the level has no seat", func(t *testing.T) { testRejection(t, s) })
}

// testRejection gives user holder a priority level of no seats of its own that
// rejects rather than queues (a FlowSchema at precedence 2: only "exempt" may have
// precedence 1, and it takes system:masters, so holder is bound to cluster-admin
// instead). A create that
// waits on an admission webhook holds the one seat the level may use while idle
// (/metrics shows it executing); holder's next request is answered 429 until it
// completes. (A create whose body has not arrived holds no seat: the handler chain
// reads bodies before priority and fairness.)
func testRejection(t *testing.T, s *harness.Server) {
	fc := s.Clientset(t).FlowcontrolV1()
	level := createLevel(t, fc.PriorityLevelConfigurations(), "held", 0, flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject})
	flow := createFlow(t, fc.FlowSchemas(), "a-held", 2, "held", "holder")
	if _, err := s.Clientset(t).RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-holder"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "holder"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holder := asUser(s.Config(), "holder", "system:authenticated")
	waitFor(t, "holder classified by a-held, and allowed", func() (bool, error) {
		resp, _ := do(t, holder, http.MethodGet, "/api/v1/namespaces/default/configmaps", nil)
		gotFS, _ := classifiedAs(resp)
		return gotFS == string(flow.UID) && resp.StatusCode == http.StatusOK, nil
	})
	release := holdCreates(t, s, "apf-held")

	// A watch is admitted when a seat is free, and streams without holding it.
	holderClient := kubernetes.NewForConfigOrDie(holder)
	w, err := holderClient.CoreV1().ConfigMaps("apf-held").Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("holder's watch: %v", err)
	}
	defer w.Stop()
	if resp, b := do(t, holder, http.MethodGet, "/api/v1/namespaces/apf-held/configmaps", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("holder's list while its watch streams: %d %s", resp.StatusCode, b)
	}

	created := make(chan error, 1)
	go func() {
		_, err := holderClient.CoreV1().ConfigMaps("apf-held").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held"}}, metav1.CreateOptions{})
		created <- err
	}()
	waitFor(t, "the create to hold held's seat", func() (bool, error) {
		select {
		case err := <-created:
			t.Fatalf("the create answered (%v) before the webhook let it go", err)
		default:
		}
		_, b := do(t, s.Config(), http.MethodGet, "/metrics", nil)
		return strings.Contains(b, `apiserver_flowcontrol_current_executing_requests{flow_schema="a-held",priority_level="held"} 1`), nil
	})
	rejected, b := do(t, holder, http.MethodGet, "/api/v1/namespaces/apf-held/configmaps", nil)
	var status metav1.Status
	if err := json.Unmarshal([]byte(b), &status); err != nil {
		t.Fatalf("%d %s: %v", rejected.StatusCode, b, err)
	}
	if status.Reason != metav1.StatusReasonTooManyRequests || status.Code != http.StatusTooManyRequests || rejected.Header.Get("Retry-After") == "" {
		t.Errorf("rejection: %+v, Retry-After %q; want a 429 Status, reason TooManyRequests, with Retry-After", status, rejected.Header.Get("Retry-After"))
	}
	if gotFS, gotPL := classifiedAs(rejected); gotFS != string(flow.UID) || gotPL != string(level.UID) {
		t.Errorf("rejection classified by %q/%q, want a-held %s / held %s", gotFS, gotPL, flow.UID, level.UID)
	}
	if _, err := holderClient.CoreV1().ConfigMaps("apf-held").Watch(t.Context(), metav1.ListOptions{}); !apierrors.IsTooManyRequests(err) {
		t.Errorf("a new watch of holder while the seat is held: %v, want 429", err)
	}
	release()
	if err := <-created; err != nil {
		t.Fatalf("the held create: %v, want it created", err)
	}
	if resp, b := do(t, holder, http.MethodGet, "/api/v1/namespaces/apf-held/configmaps/held", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("holder's read once the seat is free: %d %s", resp.StatusCode, b)
	}
}

// holdCreates makes namespace ns, whose creations of ConfigMaps named "held" a
// validating webhook holds until release is called; it returns once the webhook is
// in force on s.
func holdCreates(t *testing.T, s *harness.Server, ns string) (release func()) {
	t.Helper()
	hooks := startWebhookServer(t)
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	hooks.handle("/hold", func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if req.Name == "held" {
			<-gate
		}
		return allow(req)
	})
	admin := s.Clientset(t)
	webhookNamespace(t, admin, ns, "apf", nil)
	hook := hookIn(hooks, "hold.apf.test", "/hold", "apf", []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, "configmaps")
	hook.TimeoutSeconds = ptr.To[int32](30)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hold-apf"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{hook}}
	if _, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := 0
	waitFor(t, "the webhook in force", func() (bool, error) {
		probe++
		_, err := admin.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("probe-", probe)}}, metav1.CreateOptions{})
		return err == nil && len(hooks.reviews("/hold")) > 0, err
	})
	return release
}

// Mandatory configuration keeps its bootstrap spec (Kubernetes' validation refuses a
// change) and is recreated when deleted; a suggested object a user changed and marked
// apf.kubernetes.io/autoupdate-spec=false keeps the user's spec across a restart, and
// a deleted one comes back.
func TestPriorityAndFairnessBootstrap(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	s := c.Servers[0]
	fc := s.Clientset(t).FlowcontrolV1()
	ctx := t.Context()
	pls := fc.PriorityLevelConfigurations()

	// The bootstrap ensurer may write the objects meanwhile: updates retry on conflicts.
	updatePL := func(name string, change func(*flowcontrolv1.PriorityLevelConfiguration)) {
		t.Helper()
		if _, err := updateRetrying(ctx, pls.Get, pls.Update, name, change); err != nil {
			t.Fatal(err)
		}
	}
	// Kubernetes refuses a change of a mandatory priority level's spec.
	_, err := updateRetrying(ctx, pls.Get, pls.Update, flowcontrolv1.PriorityLevelConfigurationNameCatchAll, func(pl *flowcontrolv1.PriorityLevelConfiguration) {
		pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](77)
	})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec of 'catch-all' must equal the fixed value") {
		t.Errorf("a change of catch-all's shares: %v, want 422 Invalid", err)
	}
	want := *bootstrap.MandatoryPriorityLevelConfigurationCatchAll.Spec.Limited.NominalConcurrencyShares
	if got, err := pls.Get(ctx, flowcontrolv1.PriorityLevelConfigurationNameCatchAll, metav1.GetOptions{}); err != nil || *got.Spec.Limited.NominalConcurrencyShares != want {
		t.Errorf("catch-all: %v, want its shares %d", err, want)
	}

	exempt, err := fc.FlowSchemas().Get(ctx, flowcontrolv1.FlowSchemaNameExempt, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.FlowSchemas().Delete(ctx, exempt.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exempt FlowSchema recreated", func() (bool, error) {
		got, err := fc.FlowSchemas().Get(ctx, exempt.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && got.UID != exempt.UID, err
	})

	updatePL("workload-low", func(low *flowcontrolv1.PriorityLevelConfiguration) {
		low.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
		low.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](3)
	})
	if err := fc.FlowSchemas().Delete(ctx, "service-accounts", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A restart is ready once every bootstrap object was brought into the API.
	s.Restart(t)
	fc = s.Clientset(t).FlowcontrolV1()
	got, err := fc.PriorityLevelConfigurations().Get(ctx, "workload-low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Limited.NominalConcurrencyShares != 3 {
		t.Errorf("workload-low's shares after a restart: %d, want the user's 3", *got.Spec.Limited.NominalConcurrencyShares)
	}
	if _, err := fc.FlowSchemas().Get(ctx, "service-accounts", metav1.GetOptions{}); err != nil {
		t.Errorf("the deleted suggested FlowSchema service-accounts after a restart: %v", err)
	}
}

// Impersonation: an administrator acts as another user (client-go's Impersonate, as
// kubectl --as); a user who may not impersonate is refused 403 naming what, and
// groups without a user are 400; nothing is written. The server runs with
// --enable-priority-and-fairness=false: it serves, and classifies nothing.
func TestImpersonation(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, withTokens(t, "reader-token,reader,1001\n"),
		harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.FlowControl.Enable = false }))
	s := c.Servers[0]
	ctx := t.Context()
	if resp, _ := do(t, s.Config(), http.MethodGet, "/api/v1/namespaces", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("list namespaces: %d", resp.StatusCode)
	} else if fs, pl := classifiedAs(resp); fs != "" || pl != "" {
		t.Fatalf("classified by %q/%q with priority and fairness off", fs, pl)
	}

	// An administrator impersonating a user who may only read cannot write.
	grantRead(t, s.Clientset(t), "bob", "", "namespaces")
	asBob := kubernetes.NewForConfigOrDie(asUser(s.Config(), "bob"))
	eventually(t, "bob reads", func() error {
		_, err := asBob.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	_, err := asBob.CoreV1().ConfigMaps("default").Create(ctx, configMap("by-bob", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "bob" cannot create`) {
		t.Fatalf("bob creates: %v, want 403 for bob", err)
	}
	// ... and impersonating a member of system:masters can.
	asRoot := kubernetes.NewForConfigOrDie(asUser(s.Config(), "root", "system:masters"))
	if _, err := asRoot.CoreV1().ConfigMaps("default").Create(ctx, configMap("by-root", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("root creates: %v", err)
	}

	reader := rest.CopyConfig(s.Config())
	reader.BearerToken = "reader-token"
	sneaky := kubernetes.NewForConfigOrDie(asUser(reader, "root", "system:masters"))
	_, err = sneaky.CoreV1().ConfigMaps("default").Create(ctx, configMap("by-reader", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "reader" cannot impersonate resource "users"`) {
		t.Fatalf("reader impersonating root: %v, want 403 naming the impersonation", err)
	}

	groupsOnly := rest.CopyConfig(s.Config())
	groupsOnly.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Impersonate-Group", "system:masters")
			return rt.RoundTrip(r)
		})
	}
	_, err = kubernetes.NewForConfigOrDie(groupsOnly).CoreV1().ConfigMaps("default").Create(ctx, configMap("by-nobody", nil), metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("groups without a user: %v, want 400", err)
	}
	list, err := s.Clientset(t).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "by-root" {
		t.Fatalf("configmaps %v, want by-root alone", list.Items)
	}
}

// createLevel creates a limited priority level of the given shares that lends and
// borrows nothing.
func createLevel(t *testing.T, pls flowcontrolclient.PriorityLevelConfigurationInterface, name string, shares int32, limit flowcontrolv1.LimitResponse) *flowcontrolv1.PriorityLevelConfiguration {
	t.Helper()
	pl, err := pls.Create(t.Context(), &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To(shares), LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse: limit,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// createFlow creates a FlowSchema that sends every request of user to level.
func createFlow(t *testing.T, fss flowcontrolclient.FlowSchemaInterface, name string, precedence int32, level, user string) *flowcontrolv1.FlowSchema {
	t.Helper()
	fs, err := fss.Create(t.Context(), &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			MatchingPrecedence:         precedence,
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{flowcontrolv1.VerbAll}, APIGroups: []string{flowcontrolv1.APIGroupAll},
					Resources: []string{flowcontrolv1.ResourceAll}, Namespaces: []string{flowcontrolv1.NamespaceEvery}, ClusterScope: true,
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{flowcontrolv1.VerbAll}, NonResourceURLs: []string{flowcontrolv1.NonResourceAll}}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func danglingIs(fs *flowcontrolv1.FlowSchema, status flowcontrolv1.ConditionStatus) bool {
	for _, c := range fs.Status.Conditions {
		if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
			return c.Status == status
		}
	}
	return false
}
