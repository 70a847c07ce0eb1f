package audit_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/respond"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	auditlib "k8s.io/apiserver/pkg/audit"
)

// policyAt is a policy with one rule: everything at level, with extra lines (e.g.
// omitStages) added to the policy and to the rule.
func policyAt(level, policyExtra, ruleExtra string) string {
	return "apiVersion: audit.k8s.io/v1\nkind: Policy\n" + policyExtra + "rules:\n- level: " + level + "\n" + ruleExtra
}

const (
	cmRequest  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","uid":"u-1","resourceVersion":"7","managedFields":[{"manager":"kubectl"}]},"data":{"a":"b"}}`
	cmResponse = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","namespace":"ns1","uid":"u-1","resourceVersion":"8","managedFields":[{"manager":"kubectl"}]},"data":{"a":"b"}}`
	cmApply    = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\ndata:\n  a: b\n"
)

// answer reads the request body, then answers code with a JSON body.
func answer(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func fail(err error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { respond.Error(w, r, err) }
}

var (
	post = call{method: http.MethodPost, path: "/api/v1/namespaces/ns1/configmaps", body: cmRequest, contentType: "application/json"}
	put  = call{method: http.MethodPut, path: "/api/v1/namespaces/ns1/configmaps/cm1", body: cmRequest, contentType: "application/json"}
)

func last(evs []auditv1.Event) auditv1.Event { return evs[len(evs)-1] }

func TestFilterLevelsAndStages(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "cm1")
	wantNotFound := func(t *testing.T, evs []auditv1.Event) {
		got := last(evs).ResponseStatus
		want := &metav1.Status{Status: metav1.StatusFailure, Message: `configmaps "cm1" not found`, Reason: metav1.StatusReasonNotFound,
			Details: &metav1.StatusDetails{Name: "cm1", Kind: "configmaps"}, Code: http.StatusNotFound}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("responseStatus (-want +got):\n%s", diff)
		}
	}
	cases := []struct {
		name       string
		policy     string
		call       call
		handler    http.HandlerFunc
		wantStages []string
		check      func(t *testing.T, evs []auditv1.Event)
	}{{
		name:   "metadata: the request's metadata, no bodies",
		policy: policyAt("Metadata", "", ""), call: post, handler: answer(http.StatusCreated, cmResponse),
		wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			first, ev := evs[0], last(evs)
			if ev.Level != auditv1.LevelMetadata || ev.Verb != "create" || ev.RequestURI != "/api/v1/namespaces/ns1/configmaps" {
				t.Errorf("level, verb, URI: %s %s %s", ev.Level, ev.Verb, ev.RequestURI)
			}
			if ev.User.Username != "alice" || ev.ImpersonatedUser != nil {
				t.Errorf("user %+v, impersonated %+v", ev.User, ev.ImpersonatedUser)
			}
			if !slices.Equal(ev.SourceIPs, []string{"127.0.0.1"}) || !strings.HasPrefix(ev.UserAgent, "Go-http-client") {
				t.Errorf("sourceIPs %v, userAgent %q", ev.SourceIPs, ev.UserAgent)
			}
			wantRef := &auditv1.ObjectReference{Resource: "configmaps", Namespace: "ns1", Name: "cm1", UID: "u-1", APIVersion: "v1", ResourceVersion: "7"}
			if diff := cmp.Diff(wantRef, ev.ObjectRef); diff != "" {
				t.Errorf("objectRef (-want +got):\n%s", diff)
			}
			if ev.ResponseStatus == nil || ev.ResponseStatus.Code != http.StatusCreated || ev.RequestObject != nil || ev.ResponseObject != nil {
				t.Errorf("responseStatus %+v, requestObject %v, responseObject %v", ev.ResponseStatus, ev.RequestObject, ev.ResponseObject)
			}
			if first.ResponseStatus != nil || !first.StageTimestamp.Equal(&first.RequestReceivedTimestamp) {
				t.Errorf("RequestReceived: status %+v, stage time %v, received %v", first.ResponseStatus, first.StageTimestamp, first.RequestReceivedTimestamp)
			}
			if ev.StageTimestamp.Before(&ev.RequestReceivedTimestamp) || !ev.RequestReceivedTimestamp.Equal(&first.RequestReceivedTimestamp) {
				t.Errorf("ResponseComplete at %v, received %v", ev.StageTimestamp, ev.RequestReceivedTimestamp)
			}
		},
	}, {
		name:   "request: the request body too",
		policy: policyAt("Request", "", ""), call: post, handler: answer(http.StatusCreated, cmResponse),
		wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			ev := last(evs)
			if ev.RequestObject == nil || compactJSON(t, ev.RequestObject.Raw) != cmRequest || ev.ResponseObject != nil {
				t.Errorf("requestObject %v, responseObject %v", ev.RequestObject, ev.ResponseObject)
			}
			if evs[0].RequestObject != nil {
				t.Errorf("RequestReceived has a requestObject")
			}
		},
	}, {
		name:   "request response: both bodies",
		policy: policyAt("RequestResponse", "", ""), call: put, handler: answer(http.StatusOK, cmResponse),
		wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			ev := last(evs)
			if ev.RequestObject == nil || compactJSON(t, ev.RequestObject.Raw) != cmRequest {
				t.Errorf("requestObject %v", ev.RequestObject)
			}
			if ev.ResponseObject == nil || compactJSON(t, ev.ResponseObject.Raw) != cmResponse {
				t.Errorf("responseObject %v", ev.ResponseObject)
			}
			if ev.ObjectRef.Name != "cm1" || ev.ObjectRef.ResourceVersion != "7" || ev.Verb != "update" {
				t.Errorf("verb %s, objectRef %+v", ev.Verb, ev.ObjectRef)
			}
		},
	}, {
		name:   "omitManagedFields drops them from both bodies",
		policy: policyAt("RequestResponse", "omitManagedFields: true\n", ""), call: put, handler: answer(http.StatusOK, cmResponse),
		wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			ev := last(evs)
			for _, raw := range []string{string(ev.RequestObject.Raw), string(ev.ResponseObject.Raw)} {
				if strings.Contains(raw, "managedFields") || !strings.Contains(raw, `"name":"cm1"`) {
					t.Errorf("body %s", raw)
				}
			}
		},
	}, {
		name:   "none: no event",
		policy: policyAt("None", "", ""), call: post, handler: answer(http.StatusCreated, cmResponse),
	}, {
		name:    "server-side apply YAML is recorded as JSON",
		policy:  policyAt("Request", "", ""),
		call:    call{method: http.MethodPatch, path: "/api/v1/namespaces/ns1/configmaps/cm1?fieldManager=x", body: cmApply, contentType: "application/apply-patch+yaml"},
		handler: answer(http.StatusOK, cmResponse), wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			ev := last(evs)
			want := `{"apiVersion":"v1","data":{"a":"b"},"kind":"ConfigMap","metadata":{"name":"cm1"}}`
			if ev.RequestObject == nil || string(ev.RequestObject.Raw) != want || ev.Verb != "patch" {
				t.Errorf("verb %s, requestObject %v", ev.Verb, ev.RequestObject)
			}
		},
	}, {
		name:    "a protobuf body is recorded as JSON",
		policy:  policyAt("Request", "", ""),
		call:    call{method: http.MethodPost, path: "/api/v1/namespaces/ns1/configmaps", body: protobufConfigMap(t), contentType: "application/vnd.kubernetes.protobuf"},
		handler: answer(http.StatusCreated, cmResponse), wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			ev := last(evs)
			if ev.RequestObject == nil || !strings.Contains(string(ev.RequestObject.Raw), `"kind":"ConfigMap"`) || ev.ObjectRef.Name != "from-protobuf" {
				t.Errorf("requestObject %v, objectRef %+v", ev.RequestObject, ev.ObjectRef)
			}
		},
	}, {
		name:    "an unreadable protobuf body is not recorded",
		policy:  policyAt("RequestResponse", "", ""),
		call:    call{method: http.MethodPost, path: "/api/v1/namespaces/ns1/configmaps", body: "k8s\x00\x0a\x02v1", contentType: "application/vnd.kubernetes.protobuf"},
		handler: answer(http.StatusCreated, cmResponse), wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			if ev := last(evs); ev.RequestObject != nil || ev.ResponseObject == nil {
				t.Errorf("requestObject %v, responseObject %v", ev.RequestObject, ev.ResponseObject)
			}
		},
	}, {
		name:   "a non-resource request",
		policy: policyAt("Metadata", "", ""), call: call{path: "/healthz"}, handler: answer(http.StatusOK, "ok"),
		wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			if ev := last(evs); ev.ObjectRef != nil || ev.Verb != "get" {
				t.Errorf("verb %s, objectRef %+v", ev.Verb, ev.ObjectRef)
			}
		},
	}, {
		name:   "a failure's Status (JSON)",
		policy: policyAt("Metadata", "", ""), call: call{path: "/api/v1/namespaces/ns1/configmaps/cm1"}, handler: fail(notFound),
		wantStages: []string{"RequestReceived", "ResponseComplete"}, check: wantNotFound,
	}, {
		name:    "a failure's Status (protobuf)",
		policy:  policyAt("Metadata", "", ""),
		call:    call{path: "/api/v1/namespaces/ns1/configmaps/cm1", header: map[string]string{"Accept": respond.ProtobufMediaType}},
		handler: fail(notFound), wantStages: []string{"RequestReceived", "ResponseComplete"}, check: wantNotFound,
	}, {
		name:   "a failure's Status at RequestResponse is also the responseObject",
		policy: policyAt("RequestResponse", "", ""), call: call{path: "/api/v1/namespaces/ns1/configmaps/cm1"}, handler: fail(notFound),
		wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			wantNotFound(t, evs)
			if ev := last(evs); ev.ResponseObject == nil || !strings.Contains(string(ev.ResponseObject.Raw), `"kind":"Status"`) {
				t.Errorf("responseObject %v", ev.ResponseObject)
			}
		},
	}, {
		name:   "a panic",
		policy: policyAt("Metadata", "", ""), call: post,
		handler:    func(http.ResponseWriter, *http.Request) { panic("boom") },
		wantStages: []string{"RequestReceived", "Panic"},
		check: func(t *testing.T, evs []auditv1.Event) {
			st := last(evs).ResponseStatus
			if st == nil || st.Code != http.StatusInternalServerError || st.Reason != metav1.StatusReasonInternalError || !strings.Contains(st.Message, "boom") {
				t.Errorf("responseStatus %+v", st)
			}
		},
	}, {
		name:   "a watch that writes nothing still has its ResponseStarted",
		policy: policyAt("Metadata", "", ""), call: call{path: "/api/v1/namespaces/ns1/configmaps?watch=true"},
		handler:    func(http.ResponseWriter, *http.Request) {},
		wantStages: []string{"RequestReceived", "ResponseStarted", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			if ev := last(evs); ev.Verb != "watch" || ev.ResponseStatus.Code != http.StatusOK {
				t.Errorf("verb %s, status %+v", ev.Verb, ev.ResponseStatus)
			}
		},
	}, {
		name:   "a watch's stream is no responseObject",
		policy: policyAt("RequestResponse", "", ""), call: call{path: "/api/v1/namespaces/ns1/configmaps?watch=true"},
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_ = http.NewResponseController(w).Flush()
			_, _ = io.WriteString(w, `{"type":"ADDED","object":`+cmResponse+"}\n")
		},
		wantStages: []string{"RequestReceived", "ResponseStarted", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			for _, ev := range evs {
				if ev.ResponseObject != nil {
					t.Errorf("%s has a responseObject", ev.Stage)
				}
			}
		},
	}, {
		name:   "the policy's omitStages",
		policy: policyAt("Metadata", "omitStages: [RequestReceived]\n", ""), call: post, handler: answer(http.StatusCreated, cmResponse),
		wantStages: []string{"ResponseComplete"},
	}, {
		name:   "a rule's omitStages add to the policy's",
		policy: policyAt("Metadata", "omitStages: [RequestReceived]\n", "  omitStages: [ResponseComplete]\n"),
		call:   call{path: "/api/v1/namespaces/ns1/configmaps?watch=true"}, handler: answer(http.StatusOK, ""),
		wantStages: []string{"ResponseStarted"},
	}, {
		name:   "annotations added by handlers",
		policy: policyAt("Metadata", "", ""), call: post,
		handler: func(w http.ResponseWriter, r *http.Request) {
			audit.LogAuthorizationDecision(r.Context(), true, `RBAC: allowed by ClusterRoleBinding "admins"`)
			auditlib.AddAuditAnnotation(r.Context(), "example.com/key", "value")
			answer(http.StatusCreated, cmResponse)(w, r)
		},
		wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			want := map[string]string{
				audit.AnnotationAuthorizationDecision: "allow",
				audit.AnnotationAuthorizationReason:   `RBAC: allowed by ClusterRoleBinding "admins"`,
				"example.com/key":                     "value",
			}
			if diff := cmp.Diff(want, last(evs).Annotations); diff != "" || evs[0].Annotations != nil {
				t.Errorf("annotations (-want +got):\n%s\nat RequestReceived: %v", diff, evs[0].Annotations)
			}
		},
	}, {
		name:    "the authenticated user is the user, the impersonated one impersonatedUser",
		policy:  policyAt("Metadata", "", ""),
		call:    call{path: "/api/v1/namespaces", groups: "admins,system:authenticated", header: map[string]string{hdrAs: "bob"}},
		handler: answer(http.StatusOK, `{}`), wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			ev := last(evs)
			if ev.User.Username != "alice" || !slices.Equal(ev.User.Groups, []string{"admins", "system:authenticated"}) {
				t.Errorf("user %+v", ev.User)
			}
			if ev.ImpersonatedUser == nil || ev.ImpersonatedUser.Username != "bob" {
				t.Errorf("impersonatedUser %+v", ev.ImpersonatedUser)
			}
			if ev.Verb != "list" || ev.ObjectRef == nil || ev.ObjectRef.Resource != "namespaces" {
				t.Errorf("verb %s, objectRef %+v", ev.Verb, ev.ObjectRef)
			}
		},
	}, {
		name:    "failed authentication: one ResponseStarted event, no user",
		policy:  policyAt("Metadata", "", ""),
		call:    call{path: "/api/v1/namespaces", user: "-", header: map[string]string{"Authorization": "Bearer nope"}},
		handler: answer(http.StatusOK, `{}`), wantStages: []string{"ResponseStarted"},
		check: func(t *testing.T, evs []auditv1.Event) {
			ev := evs[0]
			want := &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonUnauthorized,
				Message: "authentication failed: credentials presented: bearer", Code: http.StatusUnauthorized}
			if diff := cmp.Diff(want, ev.ResponseStatus); diff != "" {
				t.Errorf("responseStatus (-want +got):\n%s", diff)
			}
			if ev.User.Username != "" || ev.Verb != "list" {
				t.Errorf("user %+v, verb %s", ev.User, ev.Verb)
			}
		},
	}, {
		name:   "failed authentication matches no rule naming users",
		policy: policyAt("Metadata", "", "  userGroups: [system:unauthenticated]\n"),
		call:   call{path: "/api/v1/namespaces", user: "-"}, handler: answer(http.StatusOK, `{}`),
	}, {
		name:   "a handler that writes nothing",
		policy: policyAt("Metadata", "", ""), call: call{path: "/api/v1/namespaces"},
		handler:    func(http.ResponseWriter, *http.Request) {},
		wantStages: []string{"RequestReceived", "ResponseComplete"},
		check: func(t *testing.T, evs []auditv1.Event) {
			if st := last(evs).ResponseStatus; st == nil || st.Code != http.StatusOK {
				t.Errorf("responseStatus %+v", st)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.policy, tc.handler, nil)
			h.do(tc.call)
			evs := h.events("")
			if diff := cmp.Diff(tc.wantStages, stages(evs)); diff != "" {
				t.Fatalf("stages (-want +got):\n%s", diff)
			}
			for _, ev := range evs {
				if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.AuditID == "" {
					t.Errorf("kind %q, apiVersion %q, auditID %q", ev.Kind, ev.APIVersion, ev.AuditID)
				}
			}
			if tc.check != nil {
				tc.check(t, evs)
			}
		})
	}
}

func TestAuditID(t *testing.T) {
	cases := []struct {
		name   string
		policy string
		header string // the request's Audit-ID; "": none
	}{
		{name: "passed through", policy: policyAt("Metadata", "", ""), header: "my-audit-id"},
		{name: "generated", policy: policyAt("Metadata", "", "")},
		{name: "given even when not audited", policy: policyAt("None", "", "")},
		{name: "given without a policy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.policy, answer(http.StatusOK, `{}`), nil)
			c := call{path: "/api/v1/namespaces"}
			if tc.header != "" {
				c.header = map[string]string{"Audit-ID": tc.header}
			}
			resp, _ := h.do(c)
			id := resp.Header.Get("Audit-ID")
			switch {
			case tc.header != "" && id != tc.header:
				t.Errorf("Audit-ID %q, want %q", id, tc.header)
			case tc.header == "":
				if _, err := uuid.Parse(id); err != nil {
					t.Errorf("Audit-ID %q is no UUID: %v", id, err)
				}
			}
			if tc.policy == "" || strings.Contains(tc.policy, "None") {
				return
			}
			evs := h.events(id)
			if len(evs) != 2 {
				t.Errorf("%d events with audit ID %q, want 2", len(evs), id)
			}
		})
	}
}

// TestPolicyRules sends requests through one policy whose rules match by user,
// group, verb, resource, namespace and non-resource URL, the first that matches
// deciding the level.
func TestPolicyRules(t *testing.T) {
	const policy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  users: ["system:kube-proxy"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  namespaces: ["secure"]
  resources: [{group: "", resources: ["configmaps"]}]
- level: None
  userGroups: ["system:nodes"]
  verbs: ["get", "list", "watch"]
- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources: [{group: "apps", resources: ["deployments", "deployments/scale"]}]
- level: None
  resources: [{group: "", resources: ["events"]}]
- level: Metadata
`
	h := newHarness(t, policy, answer(http.StatusOK, `{}`), nil)
	cases := []struct {
		name string
		call call
		want auditv1.Level // "": not audited
	}{
		{"a user the first rule names", call{path: "/api/v1/namespaces", user: "system:kube-proxy"}, ""},
		{"another user falls through", call{path: "/api/v1/namespaces", user: "kube-proxy"}, auditv1.LevelMetadata},
		{"a non-resource URL by prefix", call{path: "/healthz/etcd"}, ""},
		{"a non-resource URL exactly", call{path: "/version"}, ""},
		{"a non-resource URL not listed", call{path: "/metrics"}, auditv1.LevelMetadata},
		{"a resource in a namespace", call{path: "/api/v1/namespaces/secure/configmaps/x"}, auditv1.LevelRequestResponse},
		{"the resource in another namespace", call{path: "/api/v1/namespaces/other/configmaps/x"}, auditv1.LevelMetadata},
		{"a group's reads", call{path: "/api/v1/pods", groups: "system:nodes"}, ""},
		{"a group's writes", call{method: http.MethodDelete, path: "/api/v1/namespaces/a/pods/p", groups: "system:nodes"}, auditv1.LevelMetadata},
		{"a verb on a group's resource", call{method: http.MethodDelete, path: "/apis/apps/v1/namespaces/a/deployments/d"}, auditv1.LevelRequest},
		{"another verb on it", call{path: "/apis/apps/v1/namespaces/a/deployments/d"}, auditv1.LevelMetadata},
		{"a subresource listed", call{method: http.MethodPut, path: "/apis/apps/v1/namespaces/a/deployments/d/scale"}, auditv1.LevelRequest},
		{"a subresource not listed", call{method: http.MethodPut, path: "/apis/apps/v1/namespaces/a/deployments/d/status"}, auditv1.LevelMetadata},
		{"the same resource name in another group", call{method: http.MethodDelete, path: "/apis/extensions/v1beta1/namespaces/a/deployments/d"}, auditv1.LevelMetadata},
		{"a resource never audited", call{method: http.MethodPost, path: "/api/v1/namespaces/a/events"}, ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "rule-" + string(rune('a'+i))
			if tc.call.header == nil {
				tc.call.header = map[string]string{}
			}
			tc.call.header["Audit-ID"] = id
			h.do(tc.call)
			evs := h.events(id)
			if tc.want == "" {
				if len(evs) != 0 {
					t.Errorf("audited at %s, want not audited", evs[0].Level)
				}
				return
			}
			if len(evs) != 2 {
				t.Fatalf("%d events, want 2", len(evs))
			}
			if evs[0].Level != tc.want {
				t.Errorf("level %s, want %s", evs[0].Level, tc.want)
			}
		})
	}
}

// TestWatchResponseStarted checks that a watch's ResponseStarted is written once its
// response starts, while it runs, and its ResponseComplete once it ends.
func TestWatchResponseStarted(t *testing.T) {
	release := make(chan struct{})
	handler := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		<-release
	}
	h := newHarness(t, policyAt("Metadata", "", ""), http.HandlerFunc(handler), nil)
	c := call{path: "/api/v1/namespaces/ns1/configmaps?watch=true", header: map[string]string{"Audit-ID": "watch-1"}}
	resp, err := h.srv.Client().Do(c.request(t, h.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := stages(h.events("watch-1")); !slices.Equal(got, []string{"RequestReceived", "ResponseStarted"}) {
		t.Fatalf("while the watch runs: stages %v", got)
	}
	close(release)
	_, _ = io.ReadAll(resp.Body)
	<-h.served
	evs := h.events("watch-1")
	if got := stages(evs); !slices.Equal(got, []string{"RequestReceived", "ResponseStarted", "ResponseComplete"}) {
		t.Fatalf("once it ended: stages %v", got)
	}
	if started, done := evs[1], evs[2]; done.StageTimestamp.Before(&started.StageTimestamp) || started.ResponseStatus.Code != http.StatusOK {
		t.Errorf("ResponseStarted %+v at %v, ResponseComplete at %v", started.ResponseStatus, started.StageTimestamp, done.StageTimestamp)
	}
}

// protobufConfigMap is a ConfigMap in Kubernetes' protobuf envelope.
func protobufConfigMap(t *testing.T) string {
	t.Helper()
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "from-protobuf"}}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(respond.TypedScheme, respond.TypedScheme).Encode(cm, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
