package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	"github.com/concordproject/concord/server/filters"
	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// refuseWrites stands in for the storage version barrier with every gate closed: it
// refuses every resource request but reads, as the barrier does before registration.
func refuseWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := request.InfoFrom(r.Context())
		if info.IsResourceRequest && !slices.Contains([]string{"get", "list", "watch"}, info.Verb) {
			respond.Error(w, r, apierrors.NewServiceUnavailable("closed"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Every request passes one chain, in one order, whatever handler it is for: method ×
// path → the filters that ran, in order, and the answer. The rewrite endpoint is a
// write like any other and stops at the barrier (it was once mounted outside the
// chain, where nothing held it).
func TestChain(t *testing.T) {
	authn, err := auth.NewTokenAuthenticator(map[string]auth.User{"reader": {Name: "alice"}}, "admin", "")
	if err != nil {
		t.Fatal(err)
	}
	authz, err := auth.NewAuthorization([]string{auth.ModeAuthenticatedRead}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{
		Registry: registry.New(), Store: store.NewStore(storage.New(nil, "/registry")), Authenticator: authn, Authorizer: authz,
		Profiling: true, ClientSkew: func(h http.Handler) http.Handler { return h }, StorageVersionBarrier: refuseWrites,
		FlowControl:     func(h http.Handler) http.Handler { return h },
		WritesWhenReady: openGate(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"recovery", "request-info", "warnings", "metrics", "timeout", "authentication", "audit", "request-body", "impersonation", "priority-and-fairness", "authorization", "client-skew", "ready-for-writes", "storage-version-barrier"}
	upTo := func(name string) []string { return all[:slices.Index(all, name)+1] }
	for _, tc := range []struct {
		method, path, token string
		ran                 []string
		code                int
	}{
		{"GET", "/healthz", "", all, 200},
		{"GET", "/readyz", "", all, 200},
		{"GET", "/version", "", all, 200},
		{"GET", "/metrics", "admin", all, 200},
		{"GET", "/metrics", "", upTo("authentication"), 401},
		{"GET", "/debug/pprof/", "reader", upTo("authorization"), 403},
		{"GET", "/debug/pprof/", "admin", all, 200},
		{"GET", "/apis", "reader", all, 200},
		{"GET", "/api/v1/namespaces/default/configmaps", "reader", all, 404}, // no resources registered
		{"GET", "/api/v1/namespaces/default/configmaps", "", upTo("authentication"), 401},
		{"POST", "/api/v1/namespaces/default/configmaps", "reader", upTo("authorization"), 403},
		{"POST", "/api/v1/namespaces/default/configmaps", "admin", all, 503},
		{"DELETE", "/apis/apps/v1/namespaces/default/deployments/d", "admin", all, 503},
		{"POST", "/concord/v1/rewrite/core/configmaps", "reader", upTo("authorization"), 403},
		{"POST", "/concord/v1/rewrite/core/configmaps", "admin", all, 503},
		{"POST", "/concord/v1/rewrite/core", "admin", all, 400}, // no resource named: not a write
		{"GET", "/no/such/path", "admin", all, 404},
	} {
		var ran []string
		chain := s.Chain()
		for i, f := range chain {
			wrap := f.Wrap
			chain[i].Wrap = func(next http.Handler) http.Handler {
				inner := wrap(next)
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					ran = append(ran, f.Name)
					inner.ServeHTTP(w, r)
				})
			}
		}
		traced, assembled := filters.Build(s.mux, chain), s.Handler()
		for _, h := range []http.Handler{traced, assembled} {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.code {
				t.Errorf("%s %s as %q: %d %s, want %d", tc.method, tc.path, tc.token, w.Code, w.Body, tc.code)
			}
		}
		if !slices.Equal(ran, tc.ran) {
			t.Errorf("%s %s as %q ran %s\nwant %s", tc.method, tc.path, tc.token, strings.Join(ran, " → "), strings.Join(tc.ran, " → "))
		}
	}
}

// A server without a metrics registry gets one of its own (it used to panic).
func TestNewWithoutMetrics(t *testing.T) {
	authn, err := auth.NewTokenAuthenticator(nil, "admin", "")
	if err != nil {
		t.Fatal(err)
	}
	authz, err := auth.NewAuthorization([]string{auth.ModeAlwaysDeny}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Registry: registry.New(), Store: store.NewStore(storage.New(nil, "/registry")), Authenticator: authn, Authorizer: authz})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	r.Header.Set("Authorization", "Bearer admin")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("/metrics: %d", w.Code)
	}
}

// openGate returns a ready-for-writes gate that has opened.
func openGate(t *testing.T) *filters.ReadyGate {
	gate := filters.NewReadyGate(func(context.Context) error { return nil }, func(*http.Request) bool { return false }, time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = gate.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for !gate.Opened() {
		time.Sleep(time.Millisecond)
	}
	return gate
}
