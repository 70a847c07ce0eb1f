package storageversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/request"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// newTestManager returns a Manager tracking configmaps and leases (closed) and one
// custom resource, without storage: enough for the barrier. Its registry holds the
// storageversions resource, whose publishers are the user "wardle".
func newTestManager(t *testing.T) (*Manager, *tracked, *tracked) {
	t.Helper()
	reg := registry.New()
	sv := &registry.Resource{
		Group: GroupResource.Group, StorageVersion: version,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: GroupResource.Resource, Singular: "storageversion",
			Kind: "StorageVersion", ListKind: "StorageVersionList"},
		Versions:  []registry.Version{{Name: version, Served: true}},
		Converter: registry.NoneConverter{Group: GroupResource.Group},
	}
	publishers := func(user string) []string {
		if user == "wardle" {
			return []string{"wardle.example.com"}
		}
		return nil
	}
	if err := ConfigureWith(APIOptions{Publishers: publishers})(sv); err != nil {
		t.Fatal(err)
	}
	if err := reg.Put(t.Context(), sv); err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{ServerID: "s1", Registry: reg, Store: &store.Store{}})
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	cm := m.trackLocked(schema.GroupResource{Resource: "configmaps"}, false)
	cr := m.trackLocked(schema.GroupResource{Group: "example.com", Resource: "widgets"}, true)
	leases := m.trackLocked(identity.GroupResource, false)
	m.mu.Unlock()
	leases.gate.fail(errors.New("leases not registered yet"))
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
	// users are the users a request line names with as=<key> (admin by default).
	users = map[string]auth.User{
		"loopback":           loopback,
		"controller-manager": {Name: "system:concord:controller-manager", Groups: []string{auth.GroupAuthenticated}},
		"kube-scheduler":     {Name: "system:kube-scheduler", Groups: []string{auth.GroupAuthenticated}},
		"publisher":          {Name: "wardle", Groups: []string{auth.GroupAuthenticated}},
		"user":               {Name: "alice", Groups: []string{auth.GroupAuthenticated}},
	}
)

// TestBarrier runs testdata/barrier through the barrier filter of a manager that
// tracks configmaps (the gate closed until a "gate" directive opens it), leases
// (closed) and widgets.example.com. Directives:
//
//	gate open | gate fail              open configmaps' gate, or close it with the error
//	                                   given as input
//	lease valid | lease lapsed         the server's identity lease
//	request                            one request per input line: METHOD PATH [as=USER],
//	                                   USER a key of users (default: the admin)
//
// request prints, per line, whether the request reached the handler behind the
// barrier or how it was refused. Run with -rewrite to update the file.
func TestBarrier(t *testing.T) {
	m, cm, _ := newTestManager(t)
	datadriven.RunTest(t, "testdata/barrier", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "gate":
			if d.HasArg("fail") {
				cm.gate.fail(errors.New(strings.TrimSpace(d.Input)))
			} else {
				cm.gate.setOpen()
			}
			return "ok"
		case "lease":
			lapsed := d.HasArg("lapsed")
			m.cfg.LeaseValid = func(time.Time) bool { return !lapsed }
			return "ok"
		case "request":
			var b strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				f := strings.Fields(line)
				user := admin
				if len(f) > 2 {
					u, ok := users[strings.TrimPrefix(f[2], "as=")]
					if !ok {
						d.Fatalf(t, "unknown user in %q", line)
					}
					user = u
				}
				w, reached := serveBarrier(t, m.Filter, f[0], f[1], user)
				fmt.Fprintf(&b, "%s: %s\n", line, barrierOutcome(t, w, reached))
			}
			return b.String()
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

// barrierOutcome describes what the barrier did with a request.
func barrierOutcome(t *testing.T, w *httptest.ResponseRecorder, reached bool) string {
	if reached {
		return "passes"
	}
	var st metav1.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("a refusal that is not a Status: %v: %s", err, w.Body)
	}
	if w.Code != int(st.Code) || st.Status != metav1.StatusFailure {
		t.Fatalf("a refusal with code %d and Status %+v", w.Code, st)
	}
	return fmt.Sprintf("%d %s Retry-After=%s: %s", w.Code, st.Reason, w.Header().Get("Retry-After"), st.Message)
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
	case <-time.After(30 * time.Second):
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
