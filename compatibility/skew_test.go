package compatibility

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// The log line of an out-of-skew client names the range that applies to its kind:
// kubectl may be one minor newer than the server, Concord's clients and other
// client-go programs may not.
func TestClientSkewLogsTheClientsRange(t *testing.T) {
	filter, err := ClientSkewHandler(rel("1.35"), rel("1.36"), prometheus.NewPedanticRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := filter(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, tc := range []struct {
		name, userAgent, header, want string
	}{
		{"kubectl", "kubectl/v1.39.0 (linux/amd64) kubernetes/abc", "",
			`client="kubectl" clientVersion="v1.39.0" allowedFrom="1.35" allowedTo="1.37"`},
		{"kubectl too old", "kubectl/v1.34.2 (linux/amd64) kubernetes/abc", "",
			`client="kubectl" clientVersion="v1.34.2" allowedFrom="1.35" allowedTo="1.37"`},
		{"client-go", "my-controller/v1.37.0 (linux/amd64) kubernetes/abc", "",
			`client="client-go" clientVersion="v1.37.0" allowedFrom="1.35" allowedTo="1.36"`},
		{"concord", "", "1.37",
			`client="concord" clientVersion="1.37" allowedFrom="1.35" allowedTo="1.36"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			req := httptest.NewRequestWithContext(klog.NewContext(t.Context(), logger), http.MethodGet, "/", nil)
			req.Header.Set("User-Agent", tc.userAgent)
			if tc.header != "" {
				req.Header.Set(ClientVersionHeader, tc.header)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			if !strings.Contains(logged, "Request from a client outside the allowed version skew") || !strings.Contains(logged, tc.want) {
				t.Errorf("logged %q, want %s", logged, tc.want)
			}
		})
	}
}
