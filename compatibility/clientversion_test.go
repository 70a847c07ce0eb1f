package compatibility

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/concordproject/concord/catalog"
)

// A build knows its release without linker flags: the built-in catalog's.
func TestBuildRelease(t *testing.T) {
	got, err := BuildRelease()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	if !got.EqualTo(cat.BinaryVersion()) {
		t.Errorf("BuildRelease() = %s, want the catalog's binary version %s", got, cat.BinaryVersion())
	}
}

// A client identified as Concord's of a release sends the header and a User-Agent
// naming the release, keeps the wrappers it had, and is not counted by a server of
// that release; a User-Agent set by the caller stays.
func TestIdentifyClient(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	filter, err := ClientSkewHandler(rel("1.36"), rel("1.37"), reg)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ header, userAgent, earlier string }
	got := make(chan seen, 2)
	srv := httptest.NewServer(filter(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get(ClientVersionHeader), r.UserAgent(), r.Header.Get("X-Earlier")}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"37"}`))
	})))
	defer srv.Close()

	cfg := &rest.Config{Host: srv.URL, WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("X-Earlier", "kept")
			return rt.RoundTrip(r)
		})
	}}
	IdentifyClient(cfg, rel("1.37"))
	if _, err := kubernetes.NewForConfigOrDie(cfg).Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.header != "1.37" || s.earlier != "kept" {
		t.Errorf("header %q and earlier wrapper's %q, want 1.37 and kept", s.header, s.earlier)
	}
	if ua := regexp.MustCompile(`^[^/ ]+/v1\.37\.0 \([a-z0-9]+/[a-z0-9]+\) kubernetes/[0-9a-z]+$`); !ua.MatchString(s.userAgent) {
		t.Errorf("User-Agent %q, want <program>/v1.37.0 (<os>/<arch>) kubernetes/<commit>", s.userAgent)
	}

	own := &rest.Config{Host: srv.URL, UserAgent: "storage-version-migrator"}
	IdentifyClient(own, rel("1.37"))
	if _, err := kubernetes.NewForConfigOrDie(own).Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.userAgent != "storage-version-migrator" || s.header != "1.37" {
		t.Errorf("a client with its own User-Agent sent %+v", s)
	}
	if n := testutil.CollectAndCount(reg, "concord_client_version_skew_requests_total"); n != 0 {
		t.Errorf("%d skew series for clients of the server's release", n)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
