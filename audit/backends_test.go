package audit_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// webhook is an audit webhook on TLS that hands each EventList it receives to batches.
type webhook struct {
	kubeconfig string
	batches    chan auditv1.EventList
}

func newWebhook(t *testing.T) *webhook {
	t.Helper()
	wh := &webhook{batches: make(chan auditv1.EventList, 16)}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var list auditv1.EventList
		if r.URL.Path != "/audit" || r.Header.Get("Authorization") != "Bearer secret" {
			http.Error(w, "wrong path or token", http.StatusForbidden)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&list); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		wh.batches <- list
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: %s/audit
    certificate-authority-data: %s
users:
- name: audit
  user:
    token: secret
contexts:
- name: audit
  context: {cluster: audit, user: audit}
current-context: audit
`, srv.URL, base64.StdEncoding.EncodeToString(ca))
	wh.kubeconfig = filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := os.WriteFile(wh.kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return wh
}

// received returns the batches received so far.
func (wh *webhook) received() []auditv1.EventList {
	var out []auditv1.EventList
	for {
		select {
		case l := <-wh.batches:
			out = append(out, l)
		default:
			return out
		}
	}
}

func batchStages(batches []auditv1.EventList) [][]string {
	var out [][]string
	for _, b := range batches {
		out = append(out, stages(b.Items))
	}
	return out
}

// TestWebhookAndLog audits to both backends; the webhook, blocking, has each event
// before the request goes on.
func TestWebhookAndLog(t *testing.T) {
	wh := newWebhook(t)
	h := newHarness(t, policyAt("Metadata", "", ""), answer(http.StatusCreated, cmResponse), func(o *audit.Options) {
		o.WebhookConfigFile = wh.kubeconfig
		o.WebhookBatch.Mode = audit.ModeBlocking
	})
	h.do(post)
	got := batchStages(wh.received())
	if fmt.Sprint(got) != "[[RequestReceived] [ResponseComplete]]" {
		t.Errorf("webhook batches %v", got)
	}
	if got := stages(h.events("")); fmt.Sprint(got) != "[RequestReceived ResponseComplete]" {
		t.Errorf("log %v", got)
	}
}

// TestRunFlushesBufferedEvents batches webhook events for an hour: they are sent when
// Run's context ends, and later events are dropped.
func TestRunFlushesBufferedEvents(t *testing.T) {
	wh := newWebhook(t)
	o := audit.NewOptions()
	o.PolicyFile = writePolicy(t, policyAt("Metadata", "", ""))
	o.WebhookConfigFile = wh.kubeconfig
	o.WebhookBatch.MaxBatchWait = time.Hour
	a, err := audit.New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	h := &harness{t: t, served: make(chan struct{}, 4)}
	h.srv = httptest.NewServer(chain(a, answer(http.StatusCreated, cmResponse), h.served))
	defer h.srv.Close()

	h.do(post)
	h.do(post)
	if got := wh.received(); len(got) != 0 {
		t.Fatalf("batches sent before Run ended: %v", batchStages(got))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The buffered backend may send what reached its buffer as the stop came in a
	// batch of its own, and sends batches at once: every event counts, not how they
	// were batched.
	batches := batchStages(wh.received())
	got := slices.Sorted(slices.Values(slices.Concat(batches...)))
	if fmt.Sprint(got) != "[RequestReceived RequestReceived ResponseComplete ResponseComplete]" {
		t.Errorf("batches once Run ended: %v, want both stages of both requests", batches)
	}
	if resp, _ := h.do(post); resp.StatusCode != http.StatusCreated {
		t.Errorf("a request after Run ended: %s", resp.Status)
	}
	if err := a.Run(t.Context()); !errors.Is(err, audit.ErrAlreadyRun) {
		t.Errorf("Run again: %v, want ErrAlreadyRun", err)
	}
}

// TestLogRotation rotates a log of at most 1 MB (lumberjack's smallest) into backups.
func TestLogRotation(t *testing.T) {
	h := newHarness(t, policyAt("Request", "", ""), answer(http.StatusCreated, `{}`), func(o *audit.Options) {
		o.LogMaxSize = 1
		o.LogMaxBackups = 3
	})
	body := `{"data":"` + strings.Repeat("x", 400<<10) + `"}`
	for range 3 {
		h.do(call{method: http.MethodPost, path: "/api/v1/namespaces/ns1/configmaps", body: body, contentType: "application/json"})
	}
	backups, err := filepath.Glob(filepath.Join(filepath.Dir(h.log), "audit-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(backups) != 1 {
		t.Fatalf("backups %v, want one", backups)
	}
	var all []auditv1.Event
	for _, f := range append(backups, h.log) {
		all = append(all, readEvents(t, f, "")...)
	}
	if len(all) != 6 {
		t.Errorf("%d events in the log and its backup, want 6", len(all))
	}
}

func TestLegacyFormat(t *testing.T) {
	h := newHarness(t, policyAt("Metadata", "", ""), answer(http.StatusCreated, cmResponse), func(o *audit.Options) {
		o.LogFormat = audit.FormatLegacy
	})
	c := post
	c.header = map[string]string{"Audit-ID": "legacy-1"}
	h.do(c)
	data, err := os.ReadFile(h.log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []string{
		`AUDIT: id="legacy-1" stage="RequestReceived" ip="127.0.0.1" method="create" user="alice"`,
		`AUDIT: id="legacy-1" stage="ResponseComplete" ip="127.0.0.1" method="create" user="alice"`,
	}
	if len(lines) != len(want) {
		t.Fatalf("log:\n%s", data)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d %q, want it to contain %q", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[1], `namespace="ns1"`) || !strings.HasSuffix(lines[1], `response="201"`) {
		t.Errorf("line %q", lines[1])
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	notADir := filepath.Join(dir, "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	good := writePolicy(t, policyAt("Metadata", "", ""))
	cases := []struct {
		name      string
		configure func(*audit.Options)
		want      error
	}{
		{"invalid options", func(o *audit.Options) { o.LogPath, o.LogFormat = "-", "xml" }, audit.ErrInvalidOptions},
		{"no policy file", func(o *audit.Options) { o.PolicyFile = filepath.Join(dir, "missing.yaml") }, audit.ErrPolicy},
		{"a policy without rules", func(o *audit.Options) {
			o.PolicyFile = writePolicy(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n")
		}, audit.ErrPolicy},
		{"not a policy", func(o *audit.Options) { o.PolicyFile = writePolicy(t, "apiVersion: v1\nkind: ConfigMap\n") }, audit.ErrPolicy},
		{"an unknown level", func(o *audit.Options) { o.PolicyFile = writePolicy(t, policyAt("Everything", "", "")) }, audit.ErrPolicy},
		{"a log file that cannot be created", func(o *audit.Options) {
			o.PolicyFile, o.LogPath = good, filepath.Join(notADir, "audit.log")
		}, audit.ErrBackend},
		{"no webhook kubeconfig", func(o *audit.Options) {
			o.PolicyFile, o.WebhookConfigFile = good, filepath.Join(dir, "missing.kubeconfig")
		}, audit.ErrBackend},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := audit.NewOptions()
			tc.configure(&o)
			if _, err := audit.New(t.Context(), o); !errors.Is(err, tc.want) {
				t.Errorf("New: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestOff checks that without a policy, or without a backend, nothing is audited
// and no log file is created.
func TestOff(t *testing.T) {
	cases := []struct {
		name      string
		configure func(*audit.Options, string)
	}{
		{"no policy", func(o *audit.Options, log string) { o.LogPath = log }},
		{"no backend", func(o *audit.Options, _ string) { o.PolicyFile = writePolicy(t, policyAt("Metadata", "", "")) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "audit.log")
			o := audit.NewOptions()
			tc.configure(&o, log)
			a, err := audit.New(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{t: t, served: make(chan struct{}, 4)}
			h.srv = httptest.NewServer(chain(a, answer(http.StatusCreated, cmResponse), h.served))
			defer h.srv.Close()
			resp, _ := h.do(post)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Audit-ID") == "" {
				t.Errorf("%s, Audit-ID %q", resp.Status, resp.Header.Get("Audit-ID"))
			}
			if _, err := os.Stat(log); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("log file: %v", err)
			}
		})
	}
	t.Run("a nil Auditor", func(t *testing.T) {
		var a *audit.Auditor
		h := &harness{t: t, served: make(chan struct{}, 4)}
		h.srv = httptest.NewServer(chain(a, answer(http.StatusCreated, cmResponse), h.served))
		defer h.srv.Close()
		if resp, _ := h.do(post); resp.StatusCode != http.StatusCreated || resp.Header.Get("Audit-ID") == "" {
			t.Errorf("%s, Audit-ID %q", resp.Status, resp.Header.Get("Audit-ID"))
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := a.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
