package compatibility

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
)

// ClientVersionHeader is the request header in which Concord's own clients announce
// their version (major.minor, the emulation version of the component they belong to), so
// that servers can detect clients outside the allowed version skew (KEP-4330). Other
// clients do not send it and are not counted.
const ClientVersionHeader = "X-Concord-Client-Version"

// maxSkewLabels bounds the client_version values the skew counter keeps (the header is
// client input): further versions are counted under "other".
const maxSkewLabels = 16

// WrapTransport returns a transport wrapper (client-go's rest.Config.WrapTransport has
// this shape) that sets ClientVersionHeader to v's major.minor on every request.
func WrapTransport(v *version.Version) func(http.RoundTripper) http.RoundTripper {
	value := version.MajorMinor(v.Major(), v.Minor()).String()
	return func(rt http.RoundTripper) http.RoundTripper {
		return &clientVersionRoundTripper{next: rt, value: value}
	}
}

// clientVersionRoundTripper sets ClientVersionHeader on a copy of each request.
type clientVersionRoundTripper struct {
	next  http.RoundTripper
	value string
}

func (t *clientVersionRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper must not modify its request
	req.Header.Set(ClientVersionHeader, t.value)
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper returns the wrapped transport (client-go's
// net.RoundTripperWrapper), so that client-go can find the transport below.
func (t *clientVersionRoundTripper) WrappedRoundTripper() http.RoundTripper { return t.next }

// ClientSkewRange returns the client versions the server allows: the KEP's skew for
// control-plane clients (controller managers, and Concord's own clients are such),
// [minimum compatibility version, emulation version].
func (c *Config) ClientSkewRange() (lowest, highest *version.Version) {
	return c.Versions.MinCompatibility, c.Versions.Emulation
}

// ClientSkewFilter returns ClientSkewHandler for the server's ClientSkewRange.
func (c *Config) ClientSkewFilter(reg prometheus.Registerer) (func(http.Handler) http.Handler, error) {
	lowest, highest := c.ClientSkewRange()
	return ClientSkewHandler(lowest, highest, reg)
}

// ClientSkewHandler returns an HTTP filter that counts, in
// concord_client_version_skew_requests_total{client_version} (registered on reg),
// requests whose ClientVersionHeader is outside [lowest, highest], and logs the first
// request of each such version. An unparsable header counts as "invalid"; requests
// without the header are not counted. The filter never rejects a request. Put it after
// authentication, so that only authenticated clients shape the metric.
func ClientSkewHandler(lowest, highest *version.Version, reg prometheus.Registerer) (func(http.Handler) http.Handler, error) {
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "concord",
		Name:      "client_version_skew_requests_total",
		Help: fmt.Sprintf("Requests from Concord clients whose version (header %s) is outside the skew this server allows, [%s, %s].",
			ClientVersionHeader, lowest, highest),
	}, []string{"client_version"})
	if err := reg.Register(counter); err != nil {
		return nil, err
	}
	d := &skewDetector{lowest: lowest, highest: highest, counter: counter, seen: map[string]bool{}}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if value := r.Header.Get(ClientVersionHeader); value != "" {
				d.observe(r, value)
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// skewDetector counts out-of-skew client versions under a bounded set of labels.
type skewDetector struct {
	lowest, highest *version.Version
	counter         *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]bool // labels in use
}

func (d *skewDetector) observe(r *http.Request, value string) {
	label := "invalid"
	if v, err := version.Parse(value); err == nil {
		mm := version.MajorMinor(v.Major(), v.Minor())
		if inRange(mm, d.lowest, d.highest) {
			return
		}
		label = mm.String()
	}
	d.mu.Lock()
	first := !d.seen[label]
	if first && len(d.seen) >= maxSkewLabels {
		label, first = "other", !d.seen["other"]
	}
	d.seen[label] = true
	d.mu.Unlock()

	d.counter.WithLabelValues(label).Inc()
	if first {
		klog.FromContext(r.Context()).Info("Request from a client outside the allowed version skew",
			"clientVersion", value, "allowedFrom", d.lowest, "allowedTo", d.highest, "userAgent", r.UserAgent())
	}
}
