package storageversion

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/server/request"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// newTestManager returns a Manager tracking configmaps (closed) and one custom
// resource, without storage: enough for the barrier.
func newTestManager(t *testing.T) (*Manager, *tracked, *tracked) {
	t.Helper()
	m, err := NewManager(Config{ServerID: "s1", Registry: registry.New(), Store: &store.Store{}})
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	cm := m.trackLocked(schema.GroupResource{Resource: "configmaps"}, false)
	cr := m.trackLocked(schema.GroupResource{Group: "example.com", Resource: "widgets"}, true)
	m.mu.Unlock()
	return m, cm, cr
}

// serveBarrier runs one request through the barrier as user and returns the response and
// whether the handler behind it ran.
func serveBarrier(t *testing.T, h func(http.Handler) http.Handler, method, path string, user auth.User) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	var reached atomic.Bool
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Store(true)
		w.WriteHeader(http.StatusOK)
	})
	r := httptest.NewRequest(method, path, nil)
	ctx := auth.WithUser(r.Context(), user)
	ctx = request.WithInfo(ctx, request.Parse(r))
	w := httptest.NewRecorder()
	h(next).ServeHTTP(w, r.WithContext(ctx))
	return w, reached.Load()
}

var (
	admin    = auth.User{Name: auth.AdminUser, Groups: []string{auth.GroupMasters}}
	loopback = auth.User{Name: auth.LoopbackUser, Groups: []string{auth.GroupMasters}}
)

// The five kinds of request the KEP lets through, and everything else refused with
// Kubernetes' message and Retry-After.
func TestBarrier(t *testing.T) {
	m, cm, _ := newTestManager(t)
	cm.gate.fail(errors.New("etcd is sulking"))
	for _, tc := range []struct {
		method, path string
		user         auth.User
		pass         bool
	}{
		{http.MethodGet, "/healthz", admin, true},
		{http.MethodPost, "/apis", admin, true},
		{http.MethodGet, "/api/v1/namespaces/default/configmaps/x", admin, true},
		{http.MethodGet, "/api/v1/configmaps", admin, true},
		{http.MethodGet, "/api/v1/configmaps?watch=true", admin, true},
		{http.MethodPost, "/apis/internal.apiserver.k8s.io/v1alpha1/storageversions", admin, true},
		{http.MethodPost, "/api/v1/namespaces", loopback, true},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", admin, true},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", admin, true}, // not tracked
		{http.MethodPost, "/api/v1/namespaces/default/configmaps", admin, false},
		{http.MethodPut, "/api/v1/namespaces/default/configmaps/x", admin, false},
		{http.MethodPatch, "/api/v1/namespaces/default/configmaps/x", admin, false},
		{http.MethodDelete, "/api/v1/namespaces/default/configmaps/x", admin, false},
		{http.MethodDelete, "/api/v1/namespaces/default/configmaps", admin, false},
		{http.MethodPost, "/api/v1/namespaces/default/configmaps", loopback, false},
		// A storage-migration rewrite writes the resource's objects.
		{http.MethodPost, "/concord/v1/rewrite/core/configmaps", admin, false},
		{http.MethodPost, "/concord/v1/rewrite/example.com/gadgets", admin, true}, // not tracked
	} {
		w, reached := serveBarrier(t, m.Filter, tc.method, tc.path, tc.user)
		if reached != tc.pass {
			t.Errorf("%s %s as %s: passed=%v, want %v", tc.method, tc.path, tc.user.Name, reached, tc.pass)
			continue
		}
		if tc.pass {
			continue
		}
		var st metav1.Status
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		want := "wait for storage version registration to complete for resource: configmaps, last seen error: etcd is sulking"
		if w.Code != http.StatusServiceUnavailable || st.Reason != metav1.StatusReasonServiceUnavailable || st.Status != metav1.StatusFailure ||
			st.Message != want || w.Header().Get("Retry-After") != "1" {
			t.Errorf("%s %s: %d %+v Retry-After %q; want 503 ServiceUnavailable %q", tc.method, tc.path, w.Code, st, w.Header().Get("Retry-After"), want)
		}
	}
	cm.gate.setOpen()
	if _, reached := serveBarrier(t, m.Filter, http.MethodPost, "/api/v1/namespaces/default/configmaps", admin); !reached {
		t.Error("a write to a registered resource was refused")
	}
	m.cfg.LeaseValid = func(time.Time) bool { return false }
	if w, reached := serveBarrier(t, m.Filter, http.MethodPost, "/api/v1/namespaces/default/configmaps", admin); reached || w.Code != http.StatusServiceUnavailable {
		t.Errorf("a write with a lapsed identity lease: %d, passed=%v", w.Code, reached)
	}
}

// A custom resource write waits while the storage version changes, and passes once
// the change is done; closing the gate waits for the admitted writes.
func TestBarrierCustomResourceWaits(t *testing.T) {
	m, _, cr := newTestManager(t)
	path := "/apis/example.com/v1/namespaces/default/widgets"
	done := make(chan bool)
	go func() {
		_, reached := serveBarrier(t, m.Filter, http.MethodPost, path, admin)
		done <- reached
	}()
	time.Sleep(50 * time.Millisecond)
	cr.gate.setOpen()
	select {
	case reached := <-done:
		if !reached {
			t.Fatal("the waiting write was refused once the gate opened")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting write did not go through")
	}

	// An admitted write holds a drain until it ends.
	ok, _, _ := cr.gate.enter()
	if !ok {
		t.Fatal("open gate refused a write")
	}
	cr.gate.close(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := cr.gate.drain(ctx); err == nil {
		t.Fatal("drain returned with a write under way")
	}
	cr.gate.leave()
	if err := cr.gate.drain(context.Background()); err != nil {
		t.Fatal(err)
	}
}
