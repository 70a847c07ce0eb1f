package integration

import (
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/test/h2settings"
	"golang.org/x/net/http2"
)

// A server tells each HTTP/2 client how many streams it may open at once: 100 by
// default, as kube-apiserver (test/kubepeer's TestHTTP2SettingsOfKubeAPIServer), or
// --http2-max-streams-per-connection.
func TestHTTP2StreamLimit(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 1 {
			o.Serving.HTTP2MaxStreamsPerConnection = 7
		}
	}))
	for i, want := range []uint32{100, 7} {
		settings, err := h2settings.Read(c.Servers[i].Config())
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := settings[http2.SettingMaxConcurrentStreams]; !ok || got != want {
			t.Errorf("server %d advertises SETTINGS_MAX_CONCURRENT_STREAMS %d (given: %v), want %d", i, got, ok, want)
		}
	}
}
