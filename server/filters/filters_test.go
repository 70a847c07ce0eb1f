package filters_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/server/filters"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serve runs one request through chain in front of h and returns the response.
func serve(t *testing.T, chain []filters.Filter, h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	filters.Build(h, chain).ServeHTTP(w, r)
	return w
}

func status(t *testing.T, w *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("body %q is not a Status: %v", w.Body.String(), err)
	}
	return st
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

func TestBuildOrder(t *testing.T) {
	var got []string
	mark := func(name string) filters.Filter {
		return filters.Filter{Name: name, Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = append(got, name)
				next.ServeHTTP(w, r)
			})
		}}
	}
	serve(t, []filters.Filter{mark("a"), mark("b"), mark("c")}, ok, httptest.NewRequest(http.MethodGet, "/", nil))
	if strings.Join(got, ",") != "a,b,c" {
		t.Errorf("ran %v, want a, b, c", got)
	}
}

func TestRecovery(t *testing.T) {
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	w := serve(t, []filters.Filter{filters.Recovery()}, boom, httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
	if st := status(t, w); w.Code != 500 || st.Reason != metav1.StatusReasonInternalError {
		t.Errorf("got %d %+v, want a 500 InternalError Status", w.Code, st)
	}
	abort := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	defer func() {
		if p := recover(); p != http.ErrAbortHandler { //nolint:errorlint // the very value net/http panics with
			t.Errorf("recovered %v, want http.ErrAbortHandler to go on up", p)
		}
	}()
	serve(t, []filters.Filter{filters.Recovery()}, abort, httptest.NewRequest(http.MethodGet, "/", nil))
}

func TestRequestInfo(t *testing.T) {
	var got *request.Info
	h := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got, _ = request.InfoFrom(r.Context()) })
	serve(t, []filters.Filter{filters.RequestInfo()}, h, httptest.NewRequest(http.MethodDelete, "/apis/apps/v1/namespaces/a/deployments/d", nil))
	if got == nil || got.Verb != "delete" || got.Resource != "deployments" || got.Namespace != "a" || got.Name != "d" {
		t.Errorf("request info %+v", got)
	}
}

func TestTimeout(t *testing.T) {
	deadline := func(got *time.Duration) http.Handler {
		return http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			if d, ok := r.Context().Deadline(); ok {
				*got = time.Until(d)
			} else {
				*got = -1
			}
		})
	}
	chain := []filters.Filter{filters.RequestInfo(), filters.Timeout(time.Minute)}
	for _, tc := range []struct {
		url      string
		min, max time.Duration // -1: no deadline
	}{
		{"/api/v1/pods", 50 * time.Second, time.Minute},
		{"/api/v1/pods?timeout=5s", 4 * time.Second, 5 * time.Second},
		{"/api/v1/pods?timeout=5m", 50 * time.Second, time.Minute}, // longer than the limit: the limit
		{"/api/v1/pods?watch=true", -1, -1},
		{"/api/v1/watch/pods", -1, -1},
	} {
		var got time.Duration
		serve(t, chain, deadline(&got), httptest.NewRequest(http.MethodGet, tc.url, nil))
		if got < tc.min || got > tc.max {
			t.Errorf("%s: deadline in %v, want within [%v, %v]", tc.url, got, tc.min, tc.max)
		}
	}
	w := serve(t, chain, ok, httptest.NewRequest(http.MethodGet, "/api/v1/pods?timeout=soon", nil))
	if st := status(t, w); w.Code != 400 || st.Reason != metav1.StatusReasonBadRequest || !strings.Contains(st.Message, "invalid timeout specified in the request URL") {
		t.Errorf("an invalid timeout: %d %+v", w.Code, st)
	}
}

func TestAuthorization(t *testing.T) {
	authz, err := auth.NewAuthorization([]string{auth.ModeAuthenticatedRead}, nil)
	if err != nil {
		t.Fatal(err)
	}
	chain := []filters.Filter{filters.RequestInfo(), filters.Authorization(authz)}
	as := func(r *http.Request, u auth.User) *http.Request { return r.WithContext(auth.WithUser(r.Context(), u)) }
	reader := auth.User{Name: "alice", Groups: []string{auth.GroupAuthenticated}}
	admin := auth.User{Name: "root", Groups: []string{auth.GroupMasters, auth.GroupAuthenticated}}
	if w := serve(t, chain, ok, as(httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil), reader)); w.Code != 204 {
		t.Errorf("a reader lists: %d", w.Code)
	}
	w := serve(t, chain, ok, as(httptest.NewRequest(http.MethodPost, "/concord/v1/rewrite/core/configmaps", nil), reader))
	if st := status(t, w); w.Code != 403 || st.Reason != metav1.StatusReasonForbidden || !strings.Contains(st.Message, `cannot rewrite resource "configmaps"`) {
		t.Errorf("a reader rewrites: %d %+v", w.Code, st)
	}
	if w := serve(t, chain, ok, as(httptest.NewRequest(http.MethodPost, "/concord/v1/rewrite/core/configmaps", nil), admin)); w.Code != 204 {
		t.Errorf("a master rewrites: %d", w.Code)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	chain := []filters.Filter{filters.RequestInfo(), filters.Metrics(reg)}
	teapot := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	serve(t, chain, teapot, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/a/pods/p", nil))
	serve(t, chain, teapot, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	want := `
# HELP apiserver_request_total Requests served, by verb, group, version, resource, subresource and HTTP code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="418",group="",resource="pods",subresource="",verb="get",version="v1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "apiserver_request_total"); err != nil {
		t.Error(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "apiserver_request_duration_seconds" && len(f.GetMetric()) != 1 {
			t.Errorf("%d latency series, want 1", len(f.GetMetric()))
		}
	}
}
