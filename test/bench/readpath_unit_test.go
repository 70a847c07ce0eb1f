package bench

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
)

// Unit tests of BenchmarkReadPath's helpers; like the others, they start no process.

func TestStatusField(t *testing.T) {
	status := []byte("Name:\tkube-apiserver\nPPid:\t4242\nVmPeak:\t 1000 kB\nVmRSS:\t  331776 kB\nThreads:\t12\n")
	cases := []struct {
		key     string
		want    int64
		wantErr bool
	}{
		{"VmRSS", 331776, false},
		{"PPid", 4242, false},
		{"Threads", 12, false},
		{"VmSwap", 0, true},
		{"Name", 0, true},
	}
	for _, tc := range cases {
		got, err := statusField(status, tc.key)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("statusField(%s) = %d, %v; want %d, error %v", tc.key, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestVMRSSOfThisProcess(t *testing.T) {
	rss, err := vmRSS(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if rss <= 0 {
		t.Fatalf("VmRSS of this process = %d KiB", rss)
	}
}

func TestPositiveInts(t *testing.T) {
	got, err := positiveInts("-x", " 3000, 100000 ,1")
	if err != nil || !slices.Equal(got, []int{3000, 100000, 1}) {
		t.Fatalf("positiveInts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "-3", "3,x", "5,5"} {
		if _, err := positiveInts("-x", bad); err == nil {
			t.Errorf("positiveInts(%q) did not fail", bad)
		}
	}
}

func TestWithoutSetting(t *testing.T) {
	cases := map[string]string{
		"http2debug=1":                          "",
		"gctrace=1,http2debug=2":                "gctrace=1",
		"http2debug=2,gctrace=1,madvdontneed=1": "gctrace=1,madvdontneed=1",
		"gctrace=1":                             "gctrace=1",
	}
	for in, want := range cases {
		if got := withoutSetting(in, "http2debug"); got != want {
			t.Errorf("withoutSetting(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRequestKind(t *testing.T) {
	cases := []struct{ method, target, want string }{
		{http.MethodPost, "/api/v1/namespaces/a/configmaps", "create"},
		{http.MethodGet, "/api/v1/namespaces/a/configmaps?limit=500", "list"},
		{http.MethodGet, "/api/v1/namespaces/a/configmaps?watch=true&resourceVersion=7", "watch"},
		{http.MethodGet, "/api/v1/namespaces/a/configmaps/s-00000001", "get"},
		{http.MethodGet, "/api/v1/namespaces/a", ""},
		{http.MethodDelete, "/api/v1/namespaces/a/configmaps/s-00000001", ""},
	}
	for _, tc := range cases {
		if got := requestKind(httptest.NewRequest(tc.method, tc.target, nil)); got != tc.want {
			t.Errorf("requestKind(%s %s) = %q, want %q", tc.method, tc.target, got, tc.want)
		}
	}
}

func TestAnswersKeepTheFirst(t *testing.T) {
	var a answers
	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/a/configmaps?watch=true", nil)
	req.Header.Set("Accept", protobufType+",application/json")
	resp := &http.Response{Proto: "HTTP/2.0", Header: http.Header{"Content-Type": {protobufType + ";stream=watch"}}}
	a.record("watch", req, resp)
	a.record("watch", req, &http.Response{Proto: "HTTP/1.1", Header: http.Header{"Content-Type": {"application/json"}}})
	want := "watch: " + protobufType + ";stream=watch over HTTP/2.0 (Accept: " + protobufType + ",application/json)"
	if got := a.String(); got != want {
		t.Fatalf("answers = %q, want %q", got, want)
	}
}

func TestFigureTable(t *testing.T) {
	var ft figureTable
	ft.put(3000, "concord", []figure{{"get c=32 op/s", "op/s", 5000}, {"get c=32 others CPU %", "others-cpu-%", 12}})
	ft.put(3000, "kube", []figure{{"get c=32 op/s", "op/s", 2500}, {"get c=32 others CPU %", "others-cpu-%", 10}})
	ft.put(100, "concord", []figure{{"watch W=32 client CPU µs/event", "client-cpu-µs/event", 13.25}})
	var out strings.Builder
	ft.write(&out, []int{100, 3000})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("table has %d lines, want 5:\n%s", len(lines), out.String())
	}
	for i, want := range [][]string{
		{"N=100", "concord", "kube", "concord/kube"},
		{"watch W=32 client CPU µs/event", "13.2", "-", "-"},
		{"N=3000"},
		{"get c=32 op/s", "5000", "2500", "2.00"},
		{"get c=32 others CPU %", "12.0", "10.0", "-"},
	} {
		for _, cell := range want {
			if !strings.Contains(lines[i], cell) {
				t.Errorf("line %d %q lacks %q", i, lines[i], cell)
			}
		}
	}
}

func TestFormatFigure(t *testing.T) {
	cases := []struct {
		v    float64
		ok   bool
		want string
	}{
		{0, false, "-"},
		{123456.7, true, "123457"},
		{42.25, true, "42.2"},
		{0.1234, true, "0.123"},
	}
	for _, tc := range cases {
		if got := formatFigure(tc.v, tc.ok); got != tc.want {
			t.Errorf("formatFigure(%v, %v) = %q, want %q", tc.v, tc.ok, got, tc.want)
		}
	}
}

func TestHeapAlloc(t *testing.T) {
	profile := []byte("heap profile: 1: 2 [3: 4] @ heap/1048576\n1: 2 [3: 4] @ 0x1\n\n# runtime.MemStats\n# Alloc = 123\n# TotalAlloc = 999\n# HeapAlloc = 58736512\n# HeapSys = 1\n")
	got, err := heapAlloc(profile)
	if err != nil || got != 58736512 {
		t.Errorf("heapAlloc = %d, %v; want 58736512", got, err)
	}
	if _, err := heapAlloc([]byte("heap profile: 0: 0 [0: 0] @ heap/1048576\n")); err == nil {
		t.Error("heapAlloc of a profile without MemStats: no error")
	}
}

func TestMetricSum(t *testing.T) {
	exposition := []byte(`# HELP concord_watch_cache_memory_bytes Estimated memory.
# TYPE concord_watch_cache_memory_bytes gauge
concord_watch_cache_memory_bytes{resource="configmaps"} 1.5e+06
concord_watch_cache_memory_bytes{resource="secrets"} 500000
concord_watch_cache_memory_bytes_limit 7
concord_watch_cache_memory 3
`)
	got, ok := metricSum(exposition, "concord_watch_cache_memory_bytes")
	if !ok || got != 2e6 {
		t.Errorf("metricSum = %v, %v; want 2e6, true", got, ok)
	}
	if _, ok := metricSum(exposition, "concord_watch_cache_objects"); ok {
		t.Error("metricSum of an absent metric: found")
	}
}

func TestRSSSamplerKeepsThePeak(t *testing.T) {
	if _, err := vmRSS(os.Getpid()); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	s := sampleRSS(os.Getpid())
	peak, anon, err := s.stop()
	if err != nil || peak <= 0 || anon <= 0 || anon > peak {
		t.Errorf("peak resident memory = %d KiB, anonymous %d KiB, %v; want positive figures, the anonymous part at most the whole", peak, anon, err)
	}
	if again, _, _ := s.stop(); again != peak {
		t.Errorf("a second stop returned %d, the first %d", again, peak)
	}
}
