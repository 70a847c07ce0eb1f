package audit_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Test headers that stand in for authentication and impersonation.
const (
	hdrUser   = "X-Test-User"   // the authenticated user; none: authentication fails
	hdrGroups = "X-Test-Groups" // their groups, comma-separated
	hdrAs     = "X-Test-As"     // the user impersonated
)

// harness serves handler behind a chain shaped like Concord's: recovery, request
// info, authentication (failures through FailedAuthentication), the audit filter,
// impersonation. Each request served is signalled on served once the chain returns,
// when its last event has been written.
type harness struct {
	t      *testing.T
	srv    *httptest.Server
	log    string
	served chan struct{}
}

func writePolicy(t *testing.T, policy string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// newHarness audits to a log file in a temporary directory, with o from NewOptions
// changed by configure (if set).
func newHarness(t *testing.T, policy string, handler http.Handler, configure func(*audit.Options)) *harness {
	t.Helper()
	o := audit.NewOptions()
	if policy != "" {
		o.PolicyFile = writePolicy(t, policy)
	}
	o.LogPath = filepath.Join(t.TempDir(), "audit.log")
	if configure != nil {
		configure(&o)
	}
	a, err := audit.New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	runAuditor(t, a)
	h := &harness{t: t, log: o.LogPath, served: make(chan struct{}, 16)}
	h.srv = httptest.NewServer(chain(a, handler, h.served))
	t.Cleanup(h.srv.Close) // runs before the auditor stops
	return h
}

// runAuditor runs a until the test ends.
func runAuditor(t *testing.T, a *audit.Auditor) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func chain(a *audit.Auditor, handler http.Handler, served chan<- struct{}) http.Handler {
	audited := a.Filter(impersonation(handler))
	failed := a.FailedAuthentication(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond.Error(w, r, apierrors.NewUnauthorized("Unauthorized"))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { served <- struct{}{} }()
		defer func() {
			if p := recover(); p != nil {
				respond.Error(w, r, apierrors.NewInternalError(fmt.Errorf("panic: %v", p)))
			}
		}()
		r = r.WithContext(request.WithInfo(r.Context(), request.Parse(r)))
		name := r.Header.Get(hdrUser)
		if name == "" {
			failed.ServeHTTP(w, r)
			return
		}
		u := auth.User{Name: name, Groups: splitList(r.Header.Get(hdrGroups))}
		audited.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), u)))
	})
}

func impersonation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if as := r.Header.Get(hdrAs); as != "" {
			u := auth.User{Name: as, Groups: []string{auth.GroupAuthenticated}}
			audit.LogImpersonatedUser(r.Context(), u)
			r = r.WithContext(auth.WithUser(r.Context(), u))
		}
		next.ServeHTTP(w, r)
	})
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// call is one request of a test.
type call struct {
	method, path string
	body         string
	contentType  string
	user         string // default "alice"; "-" for none
	groups       string
	header       map[string]string
}

func (c call) request(t *testing.T, base string) *http.Request {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	switch c.user {
	case "":
		req.Header.Set(hdrUser, "alice")
	case "-":
	default:
		req.Header.Set(hdrUser, c.user)
	}
	if c.groups != "" {
		req.Header.Set(hdrGroups, c.groups)
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	return req
}

// do sends c, reads the whole answer and waits until the server has finished with it.
func (h *harness) do(c call) (*http.Response, []byte) {
	h.t.Helper()
	resp, err := h.srv.Client().Do(c.request(h.t, h.srv.URL))
	if err != nil {
		h.t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		h.t.Fatal(err)
	}
	<-h.served
	return resp, body
}

// events returns the events of the log, in order; those of auditID only, unless it
// is "".
func (h *harness) events(auditID string) []auditv1.Event {
	h.t.Helper()
	return readEvents(h.t, h.log, auditID)
}

func readEvents(t *testing.T, path, auditID string) []auditv1.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditv1.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if auditID == "" || string(ev.AuditID) == auditID {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func stages(evs []auditv1.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.Stage))
	}
	return out
}

// compactJSON returns b compacted, for comparisons.
func compactJSON(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return buf.String()
}
