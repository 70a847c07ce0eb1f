package compatibility

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
)

// TestVersionInfo checks /version's fields against what a real kube-apiserver reports
// for each emulation version (minimum compatibility emulation-1, clamped at the floor).
func TestVersionInfo(t *testing.T) {
	tests := []struct {
		emulation                     string
		emuMinor, minCompatMinor, git string
	}{
		{"", "37", "36", "v1.37.0-concord"},
		{"1.36", "36", "35", "v1.37.0-concord"},
		{"1.35", "35", "34", "v1.37.0-concord"},
		{"1.34", "34", "34", "v1.37.0-concord"},
	}
	for _, tt := range tests {
		t.Run("emulation "+tt.emulation, func(t *testing.T) {
			o := &Options{}
			if tt.emulation != "" {
				o.EmulationVersion = []string{tt.emulation}
			}
			info := complete(t, o).VersionInfo(version.Info{GitCommit: "abc123", BuildDate: "2026-01-01T00:00:00Z", GitTreeState: "clean"})
			want := version.Info{
				Major: "1", Minor: "37",
				EmulationMajor: "1", EmulationMinor: tt.emuMinor,
				MinCompatibilityMajor: "1", MinCompatibilityMinor: tt.minCompatMinor,
				GitVersion: tt.git, GitCommit: "abc123", GitTreeState: "clean", BuildDate: "2026-01-01T00:00:00Z",
				GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
			}
			if info != want {
				t.Errorf("VersionInfo =\n%+v\nwant\n%+v", info, want)
			}
		})
	}
	// Build fields given are kept.
	info := complete(t, &Options{}).VersionInfo(version.Info{GitVersion: "v1.37.2+concord", Platform: "plan9/386", Major: "9"})
	if info.GitVersion != "v1.37.2+concord" || info.Platform != "plan9/386" || info.Major != "1" {
		t.Errorf("VersionInfo = %+v", info)
	}
	data, _ := json.Marshal(info)
	for _, field := range []string{`"emulationMajor":"1"`, `"emulationMinor":"37"`, `"minCompatibilityMajor":"1"`, `"minCompatibilityMinor":"36"`} {
		if !strings.Contains(string(data), field) {
			t.Errorf("JSON %s lacks %s", data, field)
		}
	}
}

func TestRegisterMetrics(t *testing.T) {
	cfg := complete(t, &Options{EmulationVersion: []string{"1.36"}, FeatureGates: []string{"MutatingAdmissionPolicy=false", "WatchList=false"}})
	reg := prometheus.NewPedanticRegistry()
	if err := cfg.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP version_info The binary, emulation and minimum compatibility versions of the component (always 1).
# TYPE version_info gauge
version_info{binary="1.37",component="kube",emulation="1.36",min_compat="1.35"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "version_info"); err != nil {
		t.Error(err)
	}
	for _, f := range []struct {
		name, stage string
		value       float64
	}{
		{"StorageVersionAPI", "BETA", 1},
		{"APIServerIdentity", "BETA", 1},
		{"WatchList", "BETA", 0},
		{"CRDValidationRatcheting", "", 1},
		{"MutatingAdmissionPolicy", "", 0},
		{"AllAlpha", "ALPHA", 0},
	} {
		if got := featureValue(t, reg, f.name, f.stage); got != f.value {
			t.Errorf("kubernetes_feature_enabled{name=%q,stage=%q} = %v, want %v", f.name, f.stage, got, f.value)
		}
	}

	// Every gate that exists at 1.36, and AllAlpha and AllBeta.
	if n := testutil.CollectAndCount(reg, "kubernetes_feature_enabled"); n != len(defaultCatalog(t).FeatureGates())+2 {
		t.Errorf("%d kubernetes_feature_enabled series, want %d", n, len(defaultCatalog(t).FeatureGates())+2)
	}

	var already prometheus.AlreadyRegisteredError
	if err := cfg.RegisterMetrics(reg); !errors.As(err, &already) {
		t.Errorf("second registration: %v", err)
	}
}

// featureValue returns the value of one kubernetes_feature_enabled series (-1 if absent).
func featureValue(t *testing.T, reg prometheus.Gatherer, name, stage string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "kubernetes_feature_enabled" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["name"] == name && labels["stage"] == stage {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// TestClientSkew sends requests through the client wrapper to a server with the skew
// filter and checks what the counter sees.
func TestClientSkew(t *testing.T) {
	cfg := complete(t, &Options{EmulationVersion: []string{"1.36"}}) // allows [1.35, 1.36]
	if lo, hi := cfg.ClientSkewRange(); lo.String() != "1.35" || hi.String() != "1.36" {
		t.Fatalf("ClientSkewRange = [%s, %s], want [1.35, 1.36]", lo, hi)
	}
	reg := prometheus.NewPedanticRegistry()
	filter, err := cfg.ClientSkewFilter(reg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(filter(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get(ClientVersionHeader)]++
		mu.Unlock()
	})))
	defer srv.Close()

	send := func(v string, header bool) {
		t.Helper()
		req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		client := srv.Client()
		if header {
			client = &http.Client{Transport: WrapTransport(rel(v))(srv.Client().Transport)}
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if req.Header.Get(ClientVersionHeader) != "" {
			t.Error("the wrapper modified the caller's request")
		}
	}
	// Concurrent clients, in and out of the allowance.
	var wg sync.WaitGroup
	for _, v := range []string{"1.35", "1.36", "1.36", "1.34", "1.37", "1.37", "1.37"} {
		wg.Go(func() { send(v, true) })
	}
	wg.Go(func() { send("", false) })
	wg.Wait()

	// Real clients by their User-Agent: kubectl may be one minor newer than the
	// server, other client-go programs may not; browsers are not counted.
	for _, ua := range []string{"kubectl/v1.37.2 (linux/amd64) kubernetes/abc", "kubectl/v1.38.0 (linux/amd64) kubernetes/abc",
		"kubectl/v1.34.1 (linux/amd64) kubernetes/abc", "my-controller/v1.37.0 (linux/amd64) kubernetes/abc",
		"my-controller/v1.36.3 (linux/amd64) kubernetes/abc", "Mozilla/5.0 (X11)"} {
		resp, err := srv.Client().Do(requestTo(t, srv.URL, ua))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}

	want := `
# HELP concord_client_version_skew_requests_total Requests from clients whose version is outside the skew this server allows: [1.35, 1.36] for Concord's clients (header X-Concord-Client-Version) and client-go programs, one minor more for kubectl (User-Agent).
# TYPE concord_client_version_skew_requests_total counter
concord_client_version_skew_requests_total{client="client-go",client_version="1.37"} 1
concord_client_version_skew_requests_total{client="concord",client_version="1.34"} 1
concord_client_version_skew_requests_total{client="concord",client_version="1.37"} 3
concord_client_version_skew_requests_total{client="kubectl",client_version="1.34"} 1
concord_client_version_skew_requests_total{client="kubectl",client_version="1.38"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if seen["1.36"] != 2 || seen[""] != 7 {
		t.Errorf("requests reached the handler as %v", seen)
	}
	if _, err := cfg.ClientSkewFilter(reg); err == nil {
		t.Error("registered the skew counter twice")
	}
}

func TestClientSkewLabelsBounded(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	filter, err := ClientSkewHandler(rel("1.35"), rel("1.36"), reg)
	if err != nil {
		t.Fatal(err)
	}
	h := filter(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i := range 100 {
		req := httptest.NewRequestWithContext(testContext(t), http.MethodGet, "/", nil)
		req.Header.Set(ClientVersionHeader, fmt.Sprintf("2.%d", i))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	req := httptest.NewRequestWithContext(testContext(t), http.MethodGet, "/", nil)
	req.Header.Set(ClientVersionHeader, "not-a-version")
	h.ServeHTTP(httptest.NewRecorder(), req)

	if n := testutil.CollectAndCount(reg, "concord_client_version_skew_requests_total"); n != maxSkewLabels+1 {
		t.Errorf("%d series, want %d", n, maxSkewLabels+1)
	}
	families, _ := reg.Gather()
	total := 0.0
	for _, m := range families[0].GetMetric() {
		total += m.GetCounter().GetValue()
	}
	if total != 101 {
		t.Errorf("counted %v requests, want 101", total)
	}
}

// TestWrapTransportWithClientGo checks that the wrapper fits client-go's rest.Config.
func TestWrapTransportWithClientGo(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(ClientVersionHeader)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"37"}`))
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, WrapTransport: WrapTransport(rel("1.36.4"))}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, srv.URL+"/version", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if v := <-got; v != "1.36" {
		t.Errorf("header %q, want 1.36", v)
	}
}

// requestTo returns a GET of url with User-Agent ua.
func requestTo(t *testing.T, url, ua string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", ua)
	return req
}
