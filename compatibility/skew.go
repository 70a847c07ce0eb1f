package compatibility

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
)

// ClientVersionHeader is the request header in which Concord's own clients announce
// their version (major.minor: the emulation version of the component they belong to; for
// Concord's commands, the build's release, see IdentifyClient), so that servers can
// detect clients outside the allowed version skew (KEP-4330). Other clients do not send
// it and are known by their User-Agent, if at all.
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
// concord_client_version_skew_requests_total{client, client_version} (registered on
// reg), requests from clients outside the skew KEP-4330 allows, and logs the first
// request of each such client and version with the range its kind is allowed. Clients are known by what they send:
// Concord's own by ClientVersionHeader ("concord"), kubectl by its User-Agent
// ("kubectl/v1.36.2 ..."; allowed one minor above highest, as kubectl is), and other
// client-go programs, controllers among them, by client-go's default User-Agent
// ("<program>/v1.36.2 (linux/amd64) kubernetes/<commit>"; "client-go"). An
// unparsable header counts as "invalid"; other requests are not counted. The filter
// never rejects a request. Put it after authentication, so that only authenticated
// clients shape the metric.
func ClientSkewHandler(lowest, highest *version.Version, reg prometheus.Registerer) (func(http.Handler) http.Handler, error) {
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "concord",
		Name:      "client_version_skew_requests_total",
		Help: fmt.Sprintf("Requests from clients whose version is outside the skew this server allows: [%s, %s] for Concord's clients (header %s) and client-go programs, one minor more for kubectl (User-Agent).",
			lowest, highest, ClientVersionHeader),
	}, []string{"client", "client_version"})
	if err := reg.Register(counter); err != nil {
		return nil, err
	}
	d := &skewDetector{lowest: lowest, highest: highest, counter: counter, seen: map[string]bool{}}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if client, value, ok := clientOf(r); ok {
				d.observe(r, client, value)
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// The kinds of client the skew detector tells apart.
const (
	clientConcord  = "concord"
	clientKubectl  = "kubectl"
	clientClientGo = "client-go"
)

// clientOf returns the kind and version of the request's client: Concord's header
// first, else kubectl's or client-go's default User-Agent; ok is false for others.
func clientOf(r *http.Request) (client, value string, ok bool) {
	if value := r.Header.Get(ClientVersionHeader); value != "" {
		return clientConcord, value, true
	}
	ua := r.UserAgent()
	product, _, _ := strings.Cut(ua, " ")
	name, v, found := strings.Cut(product, "/")
	if !found || !strings.HasPrefix(v, "v") {
		return "", "", false
	}
	switch {
	case name == "kubectl":
		return clientKubectl, v, true
	case strings.Contains(ua, " kubernetes/"):
		return clientClientGo, v, true
	}
	return "", "", false
}

// skewDetector counts out-of-skew client versions under a bounded set of labels.
type skewDetector struct {
	lowest, highest *version.Version
	counter         *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]bool // client_version labels in use
}

// allowed returns the versions allowed for a kind of client: [lowest, highest], one
// minor more for kubectl.
func (d *skewDetector) allowed(client string) (lowest, highest *version.Version) {
	if client == clientKubectl {
		return d.lowest, version.MajorMinor(d.highest.Major(), d.highest.Minor()+1)
	}
	return d.lowest, d.highest
}

func (d *skewDetector) observe(r *http.Request, client, value string) {
	label := "invalid"
	lowest, highest := d.allowed(client)
	if v, err := version.ParseGeneric(value); err == nil {
		mm := version.MajorMinor(v.Major(), v.Minor())
		if inRange(mm, lowest, highest) {
			return
		}
		label = mm.String()
	}
	d.mu.Lock()
	first := !d.seen[client+"/"+label]
	if first && len(d.seen) >= maxSkewLabels {
		label, first = "other", !d.seen[client+"/other"]
	}
	d.seen[client+"/"+label] = true
	d.mu.Unlock()

	d.counter.WithLabelValues(client, label).Inc()
	if first {
		klog.FromContext(r.Context()).Info("Request from a client outside the allowed version skew",
			"client", client, "clientVersion", value, "allowedFrom", lowest, "allowedTo", highest, "userAgent", r.UserAgent())
	}
}
