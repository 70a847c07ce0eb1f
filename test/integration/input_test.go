package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// raw sends a request with the admin credentials and returns the code and the Status
// body (if the answer is a Status).
func raw(t *testing.T, s *harness.Server, method, path, ctype string, body []byte) (int, *metav1.Status, http.Header) {
	t.Helper()
	return rawWith(t, s.Config(), method, path, ctype, body)
}

func rawWith(t *testing.T, cfg *rest.Config, method, path, ctype string, body []byte) (int, *metav1.Status, http.Header) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, cfg.Host+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var st metav1.Status
	if json.Unmarshal(data, &st) == nil && st.Kind == "Status" {
		return resp.StatusCode, &st, resp.Header
	}
	return resp.StatusCode, nil, resp.Header
}

func badInputIsRefusedAndWritesNothing(t *testing.T, c *harness.Cluster, ns string) {
	s := c.Servers[0]
	path := "/api/v1/namespaces/" + ns + "/configmaps"
	big := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":%q}}`, strings.Repeat("a", 4<<20))
	cases := []struct {
		name, ctype, body string
		code              int
		reason            metav1.StatusReason
		causeField        string
	}{
		{"malformed JSON", "application/json", `{"apiVersion":"v1",`, 400, metav1.StatusReasonBadRequest, ""},
		{"malformed YAML", "application/yaml", "apiVersion: v1\nkind: [ConfigMap\n", 400, metav1.StatusReasonBadRequest, ""},
		{"not an object", "application/json", `[1,2]`, 400, metav1.StatusReasonBadRequest, ""},
		{"wrong apiVersion", "application/json", `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}`, 400, metav1.StatusReasonBadRequest, ""},
		{"wrong kind", "application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`, 400, metav1.StatusReasonBadRequest, ""},
		{"invalid name", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Not_Valid"}}`, 422, metav1.StatusReasonInvalid, "metadata.name"},
		{"missing name", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`, 422, metav1.StatusReasonInvalid, "metadata.name"},
		{"invalid label", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b c"}}}`, 422, metav1.StatusReasonInvalid, "metadata.labels"},
		{"oversized body", "application/json", big, 413, metav1.StatusReasonRequestEntityTooLarge, ""},
		{"unsupported media type", "text/plain", `hello`, 415, metav1.StatusReasonUnsupportedMediaType, ""},
		{"duplicate field under Strict", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","name":"y"}}`, 400, metav1.StatusReasonBadRequest, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, st, _ := raw(t, s, "POST", path+"?fieldValidation=Strict", tc.ctype, []byte(tc.body))
			if code != tc.code || st == nil || st.Reason != tc.reason || st.Code != int32(tc.code) {
				t.Fatalf("got %d %+v, want %d %s", code, st, tc.code, tc.reason)
			}
			if tc.causeField != "" {
				found := false
				for _, cause := range st.Details.Causes {
					found = found || strings.HasPrefix(cause.Field, tc.causeField)
				}
				if !found {
					t.Fatalf("no cause on %s in %+v", tc.causeField, st.Details)
				}
			}
		})
	}
	list, err := s.Clientset(t).CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("bad input wrote %d objects", len(list.Items))
	}
}

func fieldValidation(t *testing.T, c *harness.Cluster, ns string) {
	s := c.Servers[0]
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv","bogus":1}}`)
	code, st, _ := raw(t, s, "POST", "/api/v1/namespaces/"+ns+"/configmaps?fieldValidation=Strict", "application/json", body)
	if code != 400 || st == nil || !strings.Contains(st.Message, `unknown field "metadata.bogus"`) {
		t.Fatalf("Strict: %d %+v", code, st)
	}
	code, _, hdr := raw(t, s, "POST", "/api/v1/namespaces/"+ns+"/configmaps?fieldValidation=Warn", "application/json", body)
	if code != 201 || !strings.Contains(hdr.Get("Warning"), `unknown field \"metadata.bogus\"`) {
		t.Fatalf("Warn: %d, Warning %q", code, hdr.Get("Warning"))
	}
	code, _, hdr = raw(t, s, "POST", "/api/v1/namespaces/"+ns+"/configmaps?fieldValidation=Ignore", "application/json",
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv2","bogus":1}}`))
	if code != 201 || hdr.Get("Warning") != "" {
		t.Fatalf("Ignore: %d, Warning %q", code, hdr.Get("Warning"))
	}
	code, st, _ = raw(t, s, "POST", "/api/v1/namespaces/"+ns+"/configmaps?fieldValidation=Sometimes", "application/json", body)
	if code != 422 || st == nil || st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "fieldValidation" {
		t.Fatalf("bad fieldValidation: %d %+v, want a 422 naming CreateOptions' fieldValidation, as Kubernetes answers", code, st)
	}

	// A built-in kind's unknown and duplicate fields are named in the order they come,
	// as Kubernetes' typed decoder names them.
	deployment := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"app":"a"}},
		"spec":{"unknownField":"foo","replicas":2,"replicas":3,"selector":{"matchLabels":{"app":"a"}},
		"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`)
	code, st, _ = raw(t, s, "POST", "/apis/apps/v1/namespaces/"+ns+"/deployments?fieldValidation=Strict", "application/json", deployment)
	if want := `strict decoding error: unknown field "spec.unknownField", duplicate field "spec.replicas"`; code != 400 || st == nil || st.Message != want {
		t.Fatalf("typed object under Strict: %d %+v, want 400 %q", code, st, want)
	}

	// Apply: fields the schema does not declare, and duplicate YAML keys.
	crd, err := crdClient(t, s).ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), cronTabCRD("fv.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitServedEverywhere(t, c, gvrOf(crd, "v1"), time.Now())
	applyPath := "/apis/fv.example.com/v1/namespaces/" + ns + "/crontabs/applied?fieldManager=m&fieldValidation="
	unknown := []byte("apiVersion: fv.example.com/v1\nkind: CronTab\nmetadata:\n  name: applied\nunknownField: x\nspec:\n  cronSpec: a\n")
	code, st, _ = raw(t, s, "PATCH", applyPath+"Strict", "application/apply-patch+yaml", unknown)
	if code != 400 || st == nil || !strings.Contains(st.Message, ".unknownField: field not declared in schema") {
		t.Fatalf("apply of an undeclared field under Strict: %d %+v", code, st)
	}
	code, _, hdr = raw(t, s, "PATCH", applyPath+"Warn", "application/apply-patch+yaml", unknown)
	if code != 201 || !strings.Contains(hdr.Get("Warning"), `unknown field \"unknownField\"`) {
		t.Fatalf("apply of an undeclared field under Warn: %d, Warning %q", code, hdr.Get("Warning"))
	}
	duplicate := []byte("apiVersion: fv.example.com/v1\nkind: CronTab\nmetadata:\n  name: applied\nspec:\n  cronSpec: a\n  cronSpec: b\n")
	code, st, _ = raw(t, s, "PATCH", applyPath+"Strict", "application/apply-patch+yaml", duplicate)
	if code != 400 || st == nil || !strings.Contains(st.Message, `line 7: key "cronSpec" already set in map`) {
		t.Fatalf("apply with a duplicate key under Strict: %d %+v", code, st)
	}
}

func authentication(t *testing.T, c *harness.Cluster, _ string) {
	s := c.Servers[0]
	anon := rest.AnonymousClientConfig(s.Config())
	code, st, _ := rawWith(t, anon, "GET", "/api/v1/namespaces", "", nil)
	if code != 401 || st == nil || st.Reason != metav1.StatusReasonUnauthorized {
		t.Fatalf("anonymous list: %d %+v, want 401 Unauthorized", code, st)
	}
	for _, p := range []string{"/healthz", "/livez", "/readyz", "/version"} {
		// Readable without credentials: 200 once the server's checks pass (the
		// APIServices' autoregistration may still be finishing when Start returns).
		waitFor(t, "anonymous "+p+" to answer 200", func() (bool, error) {
			code, _, _ := rawWith(t, anon, "GET", p, "", nil)
			if code == 401 || code == 403 {
				return false, fmt.Errorf("anonymous %s: %d, want 200", p, code)
			}
			return code == 200, nil
		})
	}
	bad := rest.CopyConfig(s.Config())
	bad.BearerToken = "not-a-token"
	if code, _, _ := rawWith(t, bad, "GET", "/api/v1/namespaces", "", nil); code != 401 {
		t.Fatalf("bad token: %d, want 401", code)
	}
}

// Query parameters a server cannot use are 400 BadRequest with a message that says
// why, once: a timeout that is not a duration (as in Kubernetes), a continue token that
// is not one of the server's; a valid timeout is honoured.
func badQueryParameters(t *testing.T, c *harness.Cluster, ns string) {
	cfg := c.Servers[0].Config()
	code, st, _, body := svHTTP(t, cfg, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps?timeout=soon", nil)
	if code != http.StatusBadRequest || st == nil || st.Reason != metav1.StatusReasonBadRequest || !strings.Contains(st.Message, "invalid timeout specified in the request URL") {
		t.Errorf("an invalid timeout: %d %s", code, body)
	}
	if code, _, _, body := svHTTP(t, cfg, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps?timeout=5s", nil); code != http.StatusOK {
		t.Errorf("a valid timeout: %d %s", code, body)
	}
	code, st, _, body = svHTTP(t, cfg, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps?limit=1&continue=garbage", nil)
	if code != http.StatusBadRequest || st == nil || !strings.HasPrefix(st.Message, "invalid continue token: ") ||
		strings.Count(st.Message, "invalid continue token") != 1 {
		t.Errorf("an invalid continue token: %d %s", code, body)
	}
}

// A body without apiVersion and kind is a built-in kind's as its endpoint says, as in
// Kubernetes (dynamic clients send such bodies); a custom resource must say both.
func missingTypeMeta(t *testing.T, c *harness.Cluster, ns string) {
	s := c.Servers[0]
	code, st, _ := raw(t, s, "POST", "/api/v1/namespaces/"+ns+"/configmaps", "application/json", []byte(`{"metadata":{"name":"bare"},"data":{"k":"v"}}`))
	if code != 201 {
		t.Fatalf("ConfigMap without apiVersion and kind: %d %+v, want 201", code, st)
	}
	cm, err := s.Clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "bare", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "v" {
		t.Fatalf("get: %v %+v", err, cm)
	}
	crd, err := crdClient(t, s).ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), cronTabCRD("bare.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitServedEverywhere(t, c, gvrOf(crd, "v1"), time.Now())
	code, st, _ = raw(t, s, "POST", "/apis/bare.example.com/v1/namespaces/"+ns+"/crontabs", "application/json", []byte(`{"metadata":{"name":"bare"}}`))
	if code != 400 || st == nil || !strings.Contains(st.Message, "apiVersion is not set") {
		t.Fatalf("custom resource without apiVersion and kind: %d %+v, want 400", code, st)
	}
}
