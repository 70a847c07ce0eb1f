package integration

import (
	"crypto/tls"
	"net/url"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"golang.org/x/net/http2"
	"k8s.io/client-go/rest"
)

// A server tells each HTTP/2 client how many streams it may open at once: 100 by
// default, as kube-apiserver, or --http2-max-streams-per-connection.
func TestHTTP2StreamLimit(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 1 {
			o.Serving.HTTP2MaxStreamsPerConnection = 7
		}
	}))
	for i, want := range []uint32{100, 7} {
		if got := advertisedMaxStreams(t, c.Servers[i].Config()); got != want {
			t.Errorf("server %d advertises SETTINGS_MAX_CONCURRENT_STREAMS %d, want %d", i, got, want)
		}
	}
}

// advertisedMaxStreams opens an HTTP/2 connection to the server of rc and returns the
// stream limit of the server's first SETTINGS frame.
func advertisedMaxStreams(t *testing.T, rc *rest.Config) uint32 {
	t.Helper()
	tlsConfig, err := rest.TLSConfigFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig.NextProtos = []string{http2.NextProtoTLS}
	u, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, tlsConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if p := conn.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
		t.Fatalf("negotiated %q, want h2", p)
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	settings, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("the server's first frame is %v, want SETTINGS", f.Header())
	}
	v, ok := settings.Value(http2.SettingMaxConcurrentStreams)
	if !ok {
		t.Fatalf("the server's SETTINGS carry no SETTINGS_MAX_CONCURRENT_STREAMS: %v", settings)
	}
	return v
}
