package migrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// fakeServer is an API server for one namespaced resource, example.com/v1 widgets,
// whose objects answer PUTs as their names say:
//
//	ok-*       written: resourceVersion moves
//	current-*  already current: resourceVersion stays
//	conflict   409          gone      404
//	invalid    422          forbidden 403
//	flaky      503, 503, then written
//	throttled  429 (retry at once), then written
//	down       500 for ever
//
// It lists like Kubernetes (items without apiVersion and kind, limit and continue,
// remainingItemCount) and, if rewrite is set, serves the rewrite endpoint.
type fakeServer struct {
	names   []string
	rewrite bool
	// guardMovesAt, if above 0, is the index of the first object the rewrite endpoint
	// finds written after the StorageVersion moved: it stops its page there.
	guardMovesAt int

	mu       sync.Mutex
	attempts map[string]int
	bodies   map[string]map[string]interface{}
	lists    int
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const collection = "/apis/example.com/v1/widgets"
	switch {
	case r.Method == http.MethodGet && r.URL.Path == collection:
		f.list(w, r)
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/apis/example.com/v1/namespaces/ns/widgets/"):
		f.put(w, r, strings.TrimPrefix(r.URL.Path, "/apis/example.com/v1/namespaces/ns/widgets/"))
	case r.Method == http.MethodPost && r.URL.Path == wire.RewritePath+"example.com/widgets" && f.rewrite:
		f.serverRewrite(w, r)
	default:
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource", 0)
	}
}

func (f *fakeServer) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.lists++
	f.mu.Unlock()
	start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	end := min(start+limit, len(f.names))
	items := []map[string]interface{}{}
	for _, n := range f.names[start:end] {
		items = append(items, map[string]interface{}{
			"metadata": map[string]interface{}{"namespace": "ns", "name": n, "resourceVersion": "10"},
			"spec":     map[string]interface{}{"size": 1},
		})
	}
	meta := map[string]interface{}{"resourceVersion": "99"}
	if end < len(f.names) {
		meta["continue"] = strconv.Itoa(end)
		meta["remainingItemCount"] = len(f.names) - end
	}
	writeJSON(w, http.StatusOK, map[string]interface{}{"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": meta, "items": items})
}

func (f *fakeServer) put(w http.ResponseWriter, r *http.Request, name string) {
	body := map[string]interface{}{}
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &body); err != nil {
		status(w, http.StatusBadRequest, "BadRequest", err.Error(), 0)
		return
	}
	f.mu.Lock()
	f.attempts[name]++
	n := f.attempts[name]
	f.bodies[name] = body
	f.mu.Unlock()
	moved := func() {
		body["metadata"].(map[string]interface{})["resourceVersion"] = "11"
		writeJSON(w, http.StatusOK, body)
	}
	switch {
	case strings.HasPrefix(name, "ok-"):
		moved()
	case strings.HasPrefix(name, "current-"):
		writeJSON(w, http.StatusOK, body)
	case name == "conflict":
		status(w, http.StatusConflict, "Conflict", "the object has been modified", 0)
	case name == "gone":
		status(w, http.StatusNotFound, "NotFound", `widgets "gone" not found`, 0)
	case name == "invalid":
		status(w, http.StatusUnprocessableEntity, "Invalid", `Widget "invalid" is invalid: spec.size: Invalid value: -1`, 0)
	case name == "forbidden":
		status(w, http.StatusForbidden, "Forbidden", "denied by a webhook", 0)
	case name == "flaky" && n <= 2:
		status(w, http.StatusServiceUnavailable, "ServiceUnavailable", "try later", 0)
	case name == "throttled" && n == 1:
		status(w, http.StatusTooManyRequests, "TooManyRequests", "slow down", 1)
	case name == "down":
		status(w, http.StatusInternalServerError, "InternalError", "etcd is down", 0)
	default:
		moved()
	}
}

func (f *fakeServer) serverRewrite(w http.ResponseWriter, r *http.Request) {
	start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	end := min(start+limit, len(f.names))
	res := wire.RewriteResult{StorageVersionResourceVersion: r.URL.Query().Get(wire.RewriteStorageVersionParam)}
	if f.guardMovesAt > 0 && f.guardMovesAt < end {
		end, res.StorageVersionChanged = max(start, f.guardMovesAt), true
	}
	res.Scanned = end - start
	for _, n := range f.names[start:end] {
		switch {
		case n == "invalid":
			res.Failed = append(res.Failed, wire.RewriteFailure{Namespace: "ns", Name: n, Reason: "spec.size: Invalid value: -1"})
		case strings.HasPrefix(n, "current-"), n == "conflict", n == "gone":
			res.Skipped++
		default:
			res.Rewritten++
		}
	}
	if end < len(f.names) && !res.StorageVersionChanged {
		res.Continue = strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, res)
}

func writeJSON(w http.ResponseWriter, code int, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func status(w http.ResponseWriter, code int, reason, msg string, retryAfter int32) {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: metav1.StatusReason(reason), Message: msg}
	if retryAfter > 0 {
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: retryAfter}
	}
	writeJSON(w, code, st)
}

func startFake(t *testing.T, f *fakeServer) *rest.Config {
	t.Helper()
	f.attempts, f.bodies = map[string]int{}, map[string]map[string]interface{}{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

var widgets = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Namespaced: true}

func fastRetries(o Options) Options {
	o.InitialBackoff, o.MaxBackoff = time.Millisecond, 5*time.Millisecond
	return o
}

// The client path's outcomes: what counts as migrated, skipped and failed, which
// errors are retried and how often, and what reaches the checkpoints.
func TestClientPathOutcomes(t *testing.T) {
	f := &fakeServer{names: []string{"conflict", "current-1", "current-2", "down", "flaky", "forbidden", "gone", "invalid",
		"ok-1", "ok-2", "ok-3", "ok-4", "ok-5", "throttled"}}
	cfg := startFake(t, f)
	m, err := New(cfg, fastRetries(Options{Concurrency: 4, PageSize: 3, MaxAttempts: 3}))
	if err != nil {
		t.Fatal(err)
	}
	var reports []PageReport
	cp, err := m.Migrate(t.Context(), widgets, Checkpoint{}, func(_ context.Context, r PageReport) error {
		reports = append(reports, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Migrated: 7, Skipped: 4, Failed: 3}
	if cp.Counts != want || !cp.Finished() || cp.Path != PathClient || cp.Total == nil || *cp.Total != 14 || cp.ResourceVersion != "99" {
		t.Fatalf("checkpoint %+v, want %+v finished on the client path, total 14 at resourceVersion 99", cp, want)
	}
	if len(reports) != 5 {
		t.Errorf("%d page reports, want 5 (14 objects, 3 a page)", len(reports))
	}
	var sum Counts
	for _, r := range reports {
		sum.Add(r.Page)
	}
	if sum != want {
		t.Errorf("pages add up to %+v, want %+v", sum, want)
	}
	reasons := map[string]string{}
	for _, fl := range cp.Failures {
		reasons[fl.Name] = fl.Reason
		if fl.Namespace != "ns" {
			t.Errorf("failure %+v: namespace missing", fl)
		}
	}
	for name, fragment := range map[string]string{
		"invalid":   "422 Invalid: Widget \"invalid\" is invalid",
		"forbidden": "403 Forbidden: denied by a webhook",
		"down":      "gave up after 3 attempts",
	} {
		if !strings.Contains(reasons[name], fragment) {
			t.Errorf("reason for %s = %q, want it to contain %q", name, reasons[name], fragment)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, n := range map[string]int{"down": 3, "flaky": 3, "throttled": 2, "invalid": 1, "forbidden": 1, "conflict": 1, "ok-1": 1} {
		if f.attempts[name] != n {
			t.Errorf("%s: %d attempts, want %d", name, f.attempts[name], n)
		}
	}
	// The objects are written back as listed, with the type information list items
	// of built-in resources lack.
	if b := f.bodies["ok-1"]; b["apiVersion"] != "example.com/v1" || b["kind"] != "Widget" || b["spec"] == nil {
		t.Errorf("body written back: %v", b)
	}
}

// A migration stopped after a page resumes from its checkpoint and ends with the
// same counts as one that ran through; the server path does the same.
func TestResumeFromCheckpoint(t *testing.T) {
	names := []string{}
	for i := range 10 {
		names = append(names, fmt.Sprintf("ok-%02d", i))
	}
	names = append(names, "current-1", "invalid")
	for _, mode := range []Mode{ModeClient, ModeServer} {
		t.Run(string(mode), func(t *testing.T) {
			f := &fakeServer{names: names, rewrite: true}
			m, err := New(startFake(t, f), fastRetries(Options{Mode: mode, PageSize: 4, MaxAttempts: 1}))
			if err != nil {
				t.Fatal(err)
			}
			stop := errors.New("crash")
			pages := 0
			cp, err := m.Migrate(t.Context(), widgets, Checkpoint{}, func(context.Context, PageReport) error {
				if pages++; pages == 2 {
					return stop
				}
				return nil
			})
			if !errors.Is(err, stop) || cp.Finished() || cp.Done() != 8 {
				t.Fatalf("after the crash: %+v, %v; want 8 objects done, not finished", cp, err)
			}
			cp, err = m.Migrate(t.Context(), widgets, cp, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := Counts{Migrated: 10, Skipped: 1, Failed: 1}
			if cp.Counts != want || !cp.Finished() || len(cp.Failures) != 1 || cp.Failures[0].Name != "invalid" {
				t.Errorf("resumed: %+v, want %+v and invalid reported", cp, want)
			}
			wantPath := PathClient
			if mode == ModeServer {
				wantPath = PathServer
			}
			if cp.Path != wantPath {
				t.Errorf("path %s, want %s", cp.Path, wantPath)
			}
			if again, err := m.Migrate(t.Context(), widgets, cp, nil); err != nil || again.Counts != want {
				t.Errorf("a finished checkpoint is returned as is: %+v, %v", again, err)
			}
		})
	}
}

// A server-side page refused part-way because the StorageVersion moved leaves the
// checkpoint before that page, the first page included: resumed once the guard
// holds again, the migration rewrites every object, and is not taken for finished
// before.
func TestServerPathGuardMoved(t *testing.T) {
	names := []string{}
	for i := range 10 {
		names = append(names, fmt.Sprintf("ok-%02d", i))
	}
	for _, tc := range []struct {
		movesAt int
		next    string
		done    int64
	}{
		{movesAt: 2, next: "", done: 2},
		{movesAt: 6, next: "4", done: 6},
	} {
		t.Run(fmt.Sprintf("at-%d", tc.movesAt), func(t *testing.T) {
			f := &fakeServer{names: names, rewrite: true, guardMovesAt: tc.movesAt}
			m, err := New(startFake(t, f), fastRetries(Options{Mode: ModeServer, PageSize: 4}))
			if err != nil {
				t.Fatal(err)
			}
			res := widgets
			res.StorageVersion = "7"
			cp, err := m.Migrate(t.Context(), res, Checkpoint{}, nil)
			if !errors.Is(err, ErrStorageVersionChanged) || cp.Finished() || cp.Continue != tc.next || cp.Done() != tc.done {
				t.Fatalf("stopped: %+v, %v; want %v, not finished, continue %q, %d done", cp, err, ErrStorageVersionChanged, tc.next, tc.done)
			}
			f.guardMovesAt = 0
			cp, err = m.Migrate(t.Context(), res, cp, nil)
			if err != nil || !cp.Finished() || cp.Path != PathServer {
				t.Fatalf("resumed: %+v, %v; want finished on the server path", cp, err)
			}
			// The two objects of the refused page written before the move are counted
			// again: the page is done again whole.
			if want := int64(len(names) + 2); cp.Done() != want {
				t.Errorf("resumed: %d done, want %d", cp.Done(), want)
			}
		})
	}
}

// ModeAuto takes the server path where it is offered and the client path where the
// server answers 404; ModeServer fails without it.
func TestPathDetection(t *testing.T) {
	names := []string{"ok-1", "ok-2", "current-1"}
	for _, tc := range []struct {
		mode    Mode
		rewrite bool
		path    string
		err     error
	}{
		{ModeAuto, true, PathServer, nil},
		{ModeAuto, false, PathClient, nil},
		{ModeClient, true, PathClient, nil},
		{ModeServer, false, "", ErrNoServerPath},
	} {
		t.Run(fmt.Sprintf("%s/rewrite=%v", tc.mode, tc.rewrite), func(t *testing.T) {
			f := &fakeServer{names: names, rewrite: tc.rewrite}
			m, err := New(startFake(t, f), Options{Mode: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			cp, err := m.Migrate(t.Context(), widgets, Checkpoint{}, nil)
			if !errors.Is(err, tc.err) || cp.Path != tc.path {
				t.Fatalf("path %q, err %v; want %q, %v", cp.Path, err, tc.path, tc.err)
			}
			if tc.err == nil && cp.Counts != (Counts{Migrated: 2, Skipped: 1}) {
				t.Errorf("counts %+v", cp.Counts)
			}
		})
	}
}

func TestWithTypeMeta(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"metadata":{"name":"a"}}`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`},
		{`{"kind":"ConfigMap","metadata":{}}`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`},
		{`{"apiVersion":"v1","kind":"ConfigMap"}`, `{"apiVersion":"v1","kind":"ConfigMap"}`},
		{`{}`, `{"apiVersion":"v1","kind":"ConfigMap"}`},
	} {
		var meta itemMeta
		if err := json.Unmarshal([]byte(tc.in), &meta); err != nil {
			t.Fatal(err)
		}
		got := withTypeMeta([]byte(tc.in), meta, "v1", "ConfigMap")
		var a, b interface{}
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%s: invalid JSON %s", tc.in, got)
		}
		_ = json.Unmarshal([]byte(tc.want), &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("withTypeMeta(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{Mode: "fast"}, {QPS: -1}, {PageSize: 20000}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if err := (Options{}).Validate(); err != nil {
		t.Error(err)
	}
	if got := (Options{}).withDefaults(); got.Concurrency != 8 || got.PageSize != 500 || got.MaxAttempts != 5 || got.Mode != ModeAuto {
		t.Errorf("defaults %+v", got)
	}
}

// Up to 25 workers write over HTTP/1.1 connections of their own, more over HTTP/2,
// against a TLS server that offers both.
func TestWorkersProtocol(t *testing.T) {
	for _, tc := range []struct {
		workers int
		proto   string
	}{{1, "HTTP/1.1"}, {16, "HTTP/1.1"}, {26, "HTTP/2.0"}} {
		f := &fakeServer{names: []string{"ok-1", "ok-2", "ok-3"}, attempts: map[string]int{}, bodies: map[string]map[string]interface{}{}}
		var mu sync.Mutex
		protos := map[string]int{}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut {
				mu.Lock()
				protos[r.Proto]++
				mu.Unlock()
			}
			f.ServeHTTP(w, r)
		}))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		t.Cleanup(srv.Close)
		m, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Options{Concurrency: tc.workers})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Migrate(t.Context(), widgets, Checkpoint{}, func(context.Context, PageReport) error { return nil }); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if protos[tc.proto] != 3 || len(protos) != 1 {
			t.Errorf("%d workers: PUTs by protocol %v, want 3 over %s", tc.workers, protos, tc.proto)
		}
		mu.Unlock()
	}
}
