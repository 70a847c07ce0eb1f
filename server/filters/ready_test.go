package filters_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/server/filters"
	"k8s.io/apimachinery/pkg/util/wait"
)

// serveThrough runs gate until the test ends, and returns a handler of 204s behind
// the request info and the gate's filter.
func serveThrough(t *testing.T, gate *filters.ReadyGate) http.Handler {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = gate.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return filters.Build(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }),
		[]filters.Filter{filters.RequestInfo(), gate.Filter()})
}

// A write waits until the server has been ready once, and gets 503 with Retry-After
// if it is not within the wait; reads and exempt requests pass at once; once open,
// the gate stays open though the server is no longer ready.
func TestReadyGate(t *testing.T) {
	var ready atomic.Bool
	gate := filters.NewReadyGate(func(context.Context) error {
		if ready.Load() {
			return nil
		}
		return errors.New("starting")
	}, func(r *http.Request) bool { return r.Header.Get("X-Own") != "" }, 200*time.Millisecond)
	h := serveThrough(t, gate)
	do := func(method string, own bool) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(t.Context(), method, "/api/v1/namespaces/default/configmaps", nil)
		if own {
			req.Header.Set("X-Own", "1")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := do(http.MethodGet, false); rec.Code != http.StatusNoContent {
		t.Errorf("a read while starting: %d", rec.Code)
	}
	if rec := do(http.MethodPost, true); rec.Code != http.StatusNoContent {
		t.Errorf("the server's own write while starting: %d", rec.Code)
	}
	if rec := do(http.MethodPost, false); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("a write while the server stays unready: %d %v, want 503 with Retry-After", rec.Code, rec.Header())
	}
	if gate.Opened() {
		t.Fatal("open before the server was ready")
	}
	held := make(chan int)
	go func() { held <- do(http.MethodPost, false).Code }()
	ready.Store(true)
	if code := <-held; code != http.StatusNoContent {
		t.Errorf("a held write once ready: %d", code)
	}
	ready.Store(false)
	if rec := do(http.MethodDelete, false); rec.Code != http.StatusNoContent || !gate.Opened() {
		t.Errorf("a write after the server was ready once: %d", rec.Code)
	}
}

// TestStartGate: a starting server's gate opens once its post-start hooks are done,
// but those it is told are answered elsewhere, and its informers have synced,
// whatever its other readyz checks say; the server's own writes pass before.
func TestStartGate(t *testing.T) {
	hook, answered := health.NewPostStartHook("hook"), health.NewPostStartHook("answered")
	var synced atomic.Bool
	checks := health.New(nil)
	err := checks.AddReadyz(hook, answered, health.NamedCheck("etcd", func(*http.Request) error { return errors.New("down") }),
		health.NamedCheck(informers.SyncCheck, func(*http.Request) error {
			if synced.Load() {
				return nil
			}
			return errors.New("not synced")
		}))
	if err != nil {
		t.Fatal(err)
	}
	gate := filters.NewStartGate(checks, answered.Name())
	h := serveThrough(t, gate)
	own := auth.WithUser(t.Context(), auth.User{Name: auth.LoopbackUser})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(own, http.MethodPost, "/api/v1/namespaces/default/configmaps", nil))
	if rec.Code != http.StatusNoContent {
		t.Errorf("the server's own write while starting: %d", rec.Code)
	}
	hook.Done()
	if gate.Opened() {
		t.Fatal("open before the informers synced")
	}
	synced.Store(true)
	err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return gate.Opened(), nil
	})
	if err != nil {
		t.Fatalf("the gate did not open with its hook done and the informers synced: %v", err)
	}
}
