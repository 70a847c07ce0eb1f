package health_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/concordproject/concord/health"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// errSecret stands for a failure whose detail must not reach an unauthenticated prober.
var errSecret = errors.New("dial tcp 10.0.0.7:2379: connection refused")

func passing(name string) health.Checker {
	return health.NamedCheck(name, func(*http.Request) error { return nil })
}

func failing(name string) health.Checker {
	return health.NamedCheck(name, func(*http.Request) error { return errSecret })
}

// serve installs e on a fresh mux behind a real HTTP server.
func serve(t *testing.T, e *health.Endpoints) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	e.Install(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// get fetches path and checks the headers every probe response must carry.
func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", path, err)
	}
	if got, want := resp.Header.Get("Content-Type"), "text/plain; charset=utf-8"; got != want {
		t.Errorf("GET %s: Content-Type = %q, want %q", path, got, want)
	}
	if got, want := resp.Header.Get("X-Content-Type-Options"), "nosniff"; got != want {
		t.Errorf("GET %s: X-Content-Type-Options = %q, want %q", path, got, want)
	}
	return resp.StatusCode, string(body)
}

func expect(t *testing.T, srv *httptest.Server, path string, wantCode int, wantBody string) {
	t.Helper()
	code, body := get(t, srv, path)
	if code != wantCode || body != wantBody {
		t.Errorf("GET %s = %d %q, want %d %q", path, code, body, wantCode, wantBody)
	}
}

func TestEndpoints(t *testing.T) {
	etcdOK := passing("etcd")
	hook := health.NewPostStartHook("bootstrap")
	hook.Done()

	tests := []struct {
		name     string
		healthz  []health.Checker
		livez    []health.Checker
		readyz   []health.Checker
		path     string
		wantCode int
		wantBody string
	}{{
		name:     "readyz all passing",
		readyz:   []health.Checker{health.Ping(), etcdOK},
		path:     "/readyz",
		wantCode: http.StatusOK, wantBody: "ok",
	}, {
		name:     "healthz all passing",
		healthz:  []health.Checker{health.Ping(), etcdOK},
		path:     "/healthz",
		wantCode: http.StatusOK, wantBody: "ok",
	}, {
		name:     "livez without checks",
		path:     "/livez",
		wantCode: http.StatusOK, wantBody: "ok",
	}, {
		name:     "readyz one failing, reason withheld",
		readyz:   []health.Checker{health.Ping(), failing("etcd")},
		path:     "/readyz",
		wantCode: http.StatusInternalServerError,
		wantBody: "[+]ping ok\n[-]etcd failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n",
	}, {
		name:     "healthz one failing",
		healthz:  []health.Checker{failing("etcd"), health.Ping()},
		path:     "/healthz",
		wantCode: http.StatusInternalServerError,
		wantBody: "[-]etcd failed: reason withheld\n[+]ping ok\nhealthz check failed\n",
	}, {
		name:     "livez one failing",
		livez:    []health.Checker{failing("deadlock")},
		path:     "/livez",
		wantCode: http.StatusInternalServerError,
		wantBody: "[-]deadlock failed: reason withheld\nlivez check failed\n",
	}, {
		name:     "verbose success lists checks in order",
		readyz:   []health.Checker{health.Ping(), etcdOK, hook},
		path:     "/readyz?verbose",
		wantCode: http.StatusOK,
		wantBody: "[+]ping ok\n[+]etcd ok\n[+]poststarthook/bootstrap ok\n[+]shutdown ok\nreadyz check passed\n",
	}, {
		name:     "verbose with any value",
		livez:    []health.Checker{health.Ping()},
		path:     "/livez?verbose=false",
		wantCode: http.StatusOK, wantBody: "[+]ping ok\nlivez check passed\n",
	}, {
		name:     "excluding the failing check passes",
		readyz:   []health.Checker{health.Ping(), failing("etcd")},
		path:     "/readyz?exclude=etcd",
		wantCode: http.StatusOK, wantBody: "ok",
	}, {
		name:     "excluded check shown in verbose output",
		readyz:   []health.Checker{health.Ping(), failing("etcd")},
		path:     "/readyz?exclude=etcd&verbose",
		wantCode: http.StatusOK,
		wantBody: "[+]ping ok\n[+]etcd excluded: ok\n[+]shutdown ok\nreadyz check passed\n",
	}, {
		name:     "excluding unknown names warns, sorted and quoted",
		readyz:   []health.Checker{health.Ping(), etcdOK},
		path:     "/readyz?verbose&exclude=foo&exclude=ping&exclude=bar&exclude=foo",
		wantCode: http.StatusOK,
		wantBody: "[+]ping excluded: ok\n[+]etcd ok\n[+]shutdown ok\n" +
			`warn: some health checks cannot be excluded: no matches for "bar", "foo"` + "\n" +
			"readyz check passed\n",
	}, {
		name:     "excluding unknown names without verbose",
		readyz:   []health.Checker{health.Ping()},
		path:     "/readyz?exclude=foo",
		wantCode: http.StatusOK, wantBody: "ok",
	}, {
		name:     "warning also in a failure",
		healthz:  []health.Checker{failing("etcd")},
		path:     "/healthz?exclude=foo",
		wantCode: http.StatusInternalServerError,
		wantBody: "[-]etcd failed: reason withheld\n" +
			`warn: some health checks cannot be excluded: no matches for "foo"` + "\n" +
			"healthz check failed\n",
	}, {
		name:     "single check passing",
		readyz:   []health.Checker{health.Ping(), failing("etcd")},
		path:     "/readyz/ping",
		wantCode: http.StatusOK, wantBody: "ok",
	}, {
		name:     "single check failing shows the reason",
		readyz:   []health.Checker{health.Ping(), failing("etcd")},
		path:     "/readyz/etcd",
		wantCode: http.StatusInternalServerError,
		wantBody: "internal server error: " + errSecret.Error() + "\n",
	}, {
		name:     "single check with a slash in its name",
		readyz:   []health.Checker{hook},
		path:     "/readyz/poststarthook/bootstrap",
		wantCode: http.StatusOK, wantBody: "ok",
	}, {
		name:     "built-in shutdown check addressable",
		path:     "/readyz/shutdown",
		wantCode: http.StatusOK, wantBody: "ok",
	}, {
		name:     "same check on several lists",
		healthz:  []health.Checker{etcdOK},
		readyz:   []health.Checker{etcdOK},
		path:     "/healthz/etcd",
		wantCode: http.StatusOK, wantBody: "ok",
	}, {
		name:     "unknown check",
		readyz:   []health.Checker{health.Ping()},
		path:     "/readyz/nope",
		wantCode: http.StatusNotFound, wantBody: "404 page not found\n",
	}, {
		name:     "check of another list",
		readyz:   []health.Checker{etcdOK},
		path:     "/livez/etcd",
		wantCode: http.StatusNotFound, wantBody: "404 page not found\n",
	}, {
		name:     "shutdown is only on readyz",
		path:     "/livez/shutdown",
		wantCode: http.StatusNotFound, wantBody: "404 page not found\n",
	}, {
		name:     "empty check name",
		path:     "/readyz/",
		wantCode: http.StatusNotFound, wantBody: "404 page not found\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := health.New(nil)
			for _, add := range []struct {
				fn     func(...health.Checker) error
				checks []health.Checker
			}{{e.AddHealthz, tt.healthz}, {e.AddLivez, tt.livez}, {e.AddReadyz, tt.readyz}} {
				if err := add.fn(add.checks...); err != nil {
					t.Fatal(err)
				}
			}
			expect(t, serve(t, e), tt.path, tt.wantCode, tt.wantBody)
		})
	}
}

func TestFailureReasonIsLoggedNotShown(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2), ktesting.BufferLogs(true)))
	ctx := klog.NewContext(t.Context(), logger)

	e := health.New(nil)
	if err := e.AddReadyz(failing("etcd")); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	e.Install(mux)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	srv.Start()
	t.Cleanup(srv.Close)

	code, body := get(t, srv, "/readyz")
	if code != http.StatusInternalServerError || strings.Contains(body, "10.0.0.7") {
		t.Errorf("GET /readyz = %d %q, want 500 without the reason", code, body)
	}
	logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	for _, want := range []string{`endpoint="readyz"`, `check="etcd"`, errSecret.Error()} {
		if !strings.Contains(logged, want) {
			t.Errorf("log does not contain %q:\n%s", want, logged)
		}
	}
}

func TestPostStartHookLifecycle(t *testing.T) {
	e := health.New(nil)
	hook := health.NewPostStartHook("bootstrap")
	if got, want := hook.Name(), "poststarthook/bootstrap"; got != want {
		t.Fatalf("Name() = %q, want %q", got, want)
	}
	if err := e.AddReadyz(health.Ping(), hook); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, e)
	const unready = "[+]ping ok\n[-]poststarthook/bootstrap failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n"

	expect(t, srv, "/readyz", http.StatusInternalServerError, unready)
	expect(t, srv, "/readyz/poststarthook/bootstrap", http.StatusInternalServerError, "internal server error: not finished\n")
	if err := hook.Check(nil); !errors.Is(err, health.ErrNotFinished) {
		t.Errorf("Check() = %v, want ErrNotFinished", err)
	}

	errWaiting := errors.New("waiting for namespaces")
	hook.Fail(errWaiting)
	expect(t, srv, "/readyz", http.StatusInternalServerError, unready)
	expect(t, srv, "/readyz/poststarthook/bootstrap", http.StatusInternalServerError,
		"internal server error: not finished: waiting for namespaces\n")
	if err := hook.Check(nil); !errors.Is(err, health.ErrNotFinished) || !errors.Is(err, errWaiting) {
		t.Errorf("Check() = %v, want it to match ErrNotFinished and the Fail reason", err)
	}

	hook.Fail(nil)
	expect(t, srv, "/readyz/poststarthook/bootstrap", http.StatusInternalServerError, "internal server error: not finished\n")

	hook.Done()
	expect(t, srv, "/readyz", http.StatusOK, "ok")
	expect(t, srv, "/readyz/poststarthook/bootstrap", http.StatusOK, "ok")

	hook.Fail(errWaiting) // a finished hook stays finished
	hook.Done()
	expect(t, srv, "/readyz/poststarthook/bootstrap", http.StatusOK, "ok")
}

func TestShuttingDown(t *testing.T) {
	e := health.New(nil)
	for _, add := range []func(...health.Checker) error{e.AddHealthz, e.AddLivez, e.AddReadyz} {
		if err := add(health.Ping()); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, e)
	expect(t, srv, "/readyz", http.StatusOK, "ok")

	e.ShuttingDown()
	e.ShuttingDown()
	expect(t, srv, "/readyz", http.StatusInternalServerError,
		"[+]ping ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n")
	expect(t, srv, "/readyz/shutdown", http.StatusInternalServerError,
		"internal server error: "+health.ErrShuttingDown.Error()+"\n")
	expect(t, srv, "/readyz?exclude=shutdown", http.StatusOK, "ok")
	expect(t, srv, "/livez", http.StatusOK, "ok")
	expect(t, srv, "/healthz", http.StatusOK, "ok")
}

func TestAddValidation(t *testing.T) {
	for _, name := range []string{
		"ping", "etcd-readiness", "informer_sync", "a.b:c", "poststarthook/rbac/bootstrap-roles", "9",
	} {
		if err := health.New(nil).AddLivez(passing(name)); err != nil {
			t.Errorf("AddLivez(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{
		"", " ", "a b", "/ping", "ping/", "a//b", "../x", "a/./b", "-x", "x?y", "x#y", "x%2Fy", "ping\n",
	} {
		if err := health.New(nil).AddLivez(passing(name)); !errors.Is(err, health.ErrInvalidCheck) {
			t.Errorf("AddLivez(%q) = %v, want ErrInvalidCheck", name, err)
		}
	}
	if err := health.New(nil).AddHealthz(nil); !errors.Is(err, health.ErrInvalidCheck) {
		t.Errorf("AddHealthz(nil) = %v, want ErrInvalidCheck", err)
	}

	e := health.New(nil)
	if err := e.AddReadyz(health.Ping()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		add    func(...health.Checker) error
		checks []health.Checker
		want   error
	}{
		{"already on the list", e.AddReadyz, []health.Checker{passing("etcd"), passing("ping")}, health.ErrDuplicateCheck},
		{"twice in one call", e.AddReadyz, []health.Checker{passing("etcd"), passing("etcd")}, health.ErrDuplicateCheck},
		{"built-in shutdown", e.AddReadyz, []health.Checker{passing("etcd"), passing(health.ShutdownCheckName)}, health.ErrDuplicateCheck},
		{"invalid after a valid one", e.AddReadyz, []health.Checker{passing("etcd"), nil}, health.ErrInvalidCheck},
		{"same name on another list", e.AddLivez, []health.Checker{passing("ping"), passing(health.ShutdownCheckName)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.add(tt.checks...); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	// A rejected call adds nothing.
	srv := serve(t, e)
	expect(t, srv, "/readyz/etcd", http.StatusNotFound, "404 page not found\n")
	expect(t, srv, "/readyz?verbose", http.StatusOK, "[+]ping ok\n[+]shutdown ok\nreadyz check passed\n")
}

func TestNamedCheckPassesRequest(t *testing.T) {
	e := health.New(nil)
	check := health.NamedCheck("path", func(r *http.Request) error {
		if r.URL.Path != "/healthz/path" {
			return fmt.Errorf("saw path %q", r.URL.Path)
		}
		return nil
	})
	if err := e.AddHealthz(check); err != nil {
		t.Fatal(err)
	}
	expect(t, serve(t, e), "/healthz/path", http.StatusOK, "ok")
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	e := health.New(reg)
	var etcdDown atomic.Bool
	etcdDown.Store(true)
	etcd := health.NamedCheck("etcd", func(*http.Request) error {
		if etcdDown.Load() {
			return errSecret
		}
		return nil
	})
	if err := e.AddReadyz(health.Ping(), etcd); err != nil {
		t.Fatal(err)
	}
	if err := e.AddLivez(health.Ping()); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, e)

	get(t, srv, "/readyz")              // ping ok, etcd error, shutdown ok
	get(t, srv, "/readyz?exclude=ping") // etcd error, shutdown ok; ping not evaluated
	get(t, srv, "/livez")               // livez ping ok
	get(t, srv, "/readyz/ping")         // single-check evaluations count too
	etcdDown.Store(false)
	get(t, srv, "/readyz/etcd")         // etcd ok: gauge back to 1
	get(t, srv, "/readyz?exclude=nope") // all ok

	const want = `
# HELP kubernetes_healthcheck Result of the latest evaluation of a health check: 1 passed, 0 failed.
# TYPE kubernetes_healthcheck gauge
kubernetes_healthcheck{name="etcd",type="readyz"} 1
kubernetes_healthcheck{name="ping",type="livez"} 1
kubernetes_healthcheck{name="ping",type="readyz"} 1
kubernetes_healthcheck{name="shutdown",type="readyz"} 1
# HELP kubernetes_healthchecks_total Number of health check evaluations, by outcome.
# TYPE kubernetes_healthchecks_total counter
kubernetes_healthchecks_total{name="etcd",status="error",type="readyz"} 2
kubernetes_healthchecks_total{name="etcd",status="success",type="readyz"} 2
kubernetes_healthchecks_total{name="ping",status="success",type="livez"} 1
kubernetes_healthchecks_total{name="ping",status="success",type="readyz"} 3
kubernetes_healthchecks_total{name="shutdown",status="success",type="readyz"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	// The gauge follows the latest evaluation down as well as up.
	e.ShuttingDown()
	get(t, srv, "/readyz")
	const wantDown = `
# HELP kubernetes_healthcheck Result of the latest evaluation of a health check: 1 passed, 0 failed.
# TYPE kubernetes_healthcheck gauge
kubernetes_healthcheck{name="etcd",type="readyz"} 1
kubernetes_healthcheck{name="ping",type="livez"} 1
kubernetes_healthcheck{name="ping",type="readyz"} 1
kubernetes_healthcheck{name="shutdown",type="readyz"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantDown), "kubernetes_healthcheck"); err != nil {
		t.Error(err)
	}
}

func TestMetricsRegistration(t *testing.T) {
	t.Run("endpoints sharing a registerer share the series", func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		for range 2 {
			e := health.New(reg)
			if err := e.AddLivez(health.Ping()); err != nil {
				t.Fatal(err)
			}
			get(t, serve(t, e), "/livez")
		}
		counter := `
# HELP kubernetes_healthchecks_total Number of health check evaluations, by outcome.
# TYPE kubernetes_healthchecks_total counter
kubernetes_healthchecks_total{name="ping",status="success",type="livez"} 2
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(counter), "kubernetes_healthchecks_total"); err != nil {
			t.Error(err)
		}
	})
	t.Run("a different metric under the same name panics", func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "kubernetes_healthcheck", Help: "Something else."}))
		defer func() {
			if recover() == nil {
				t.Error("New did not panic")
			}
		}()
		health.New(reg)
	})
}

// TestConcurrentAddWhileServing is meant for -race: checks are added, hooks finish and
// the server starts shutting down while requests evaluate the lists.
func TestConcurrentAddWhileServing(t *testing.T) {
	e := health.New(prometheus.NewRegistry())
	srv := serve(t, e)
	const adders, readers, perWorker = 4, 4, 10

	var wg sync.WaitGroup
	for a := range adders {
		wg.Go(func() {
			for i := range perWorker {
				hook := health.NewPostStartHook(fmt.Sprintf("hook-%d-%d", a, i))
				check := passing(fmt.Sprintf("check-%d-%d", a, i))
				for _, add := range []func(...health.Checker) error{e.AddHealthz, e.AddLivez, e.AddReadyz} {
					if err := add(check, hook); err != nil {
						t.Error(err)
					}
				}
				hook.Done()
			}
		})
	}
	// onlyUnfinished reports whether every failed line in body names a check that may
	// legitimately fail during this test: an unfinished hook, or shutdown.
	onlyUnfinished := func(body string) bool {
		for line := range strings.Lines(body) {
			if strings.HasPrefix(line, "[-]") &&
				!strings.HasPrefix(line, "[-]poststarthook/") && !strings.HasPrefix(line, "[-]shutdown ") {
				return false
			}
		}
		return true
	}
	for range readers {
		wg.Go(func() {
			for i := range perWorker {
				for _, path := range []string{"/readyz?verbose", "/livez"} {
					if code, body := get(t, srv, path); code != http.StatusOK && !onlyUnfinished(body) {
						t.Errorf("GET %s = %d %q", path, code, body)
					}
				}
				path := fmt.Sprintf("/healthz/check-0-%d", i)
				if code, body := get(t, srv, path); code != http.StatusOK && code != http.StatusNotFound {
					t.Errorf("GET %s = %d %q, want 200 or 404 (not added yet)", path, code, body)
				}
			}
		})
	}
	wg.Go(e.ShuttingDown)
	wg.Wait()

	code, body := get(t, srv, "/livez?verbose")
	if code != http.StatusOK {
		t.Errorf("GET /livez?verbose = %d %q", code, body)
	}
	if got, want := strings.Count(body, "\n"), 2*adders*perWorker+1; got != want {
		t.Errorf("GET /livez?verbose has %d lines, want %d:\n%s", got, want, body)
	}
	expect(t, srv, "/readyz?exclude=shutdown", http.StatusOK, "ok")
}
