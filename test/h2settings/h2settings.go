package h2settings

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"

	"golang.org/x/net/http2"
	"k8s.io/client-go/rest"
)

// ErrNotHTTP2 is returned when the server does not speak HTTP/2 as expected.
var ErrNotHTTP2 = errors.New("not an HTTP/2 server's answer")

// Read opens an HTTP/2 connection to the server of rc over TLS, sends the client
// preface, and returns the settings of the server's first frame.
func Read(rc *rest.Config) (map[http2.SettingID]uint32, error) {
	tlsConfig, err := rest.TLSConfigFor(rc)
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil {
		return nil, fmt.Errorf("%w: %s is not served over TLS", ErrNotHTTP2, rc.Host)
	}
	tlsConfig.NextProtos = []string{http2.NextProtoTLS}
	u, err := url.Parse(rc.Host)
	if err != nil {
		return nil, err
	}
	conn, err := tls.Dial("tcp", u.Host, tlsConfig)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	if p := conn.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
		return nil, fmt.Errorf("%w: negotiated %q", ErrNotHTTP2, p)
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		return nil, err
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		return nil, err
	}
	f, err := fr.ReadFrame()
	if err != nil {
		return nil, err
	}
	frame, ok := f.(*http2.SettingsFrame)
	if !ok {
		return nil, fmt.Errorf("%w: the first frame is %v, not SETTINGS", ErrNotHTTP2, f.Header())
	}
	settings := map[http2.SettingID]uint32{}
	err = frame.ForeachSetting(func(s http2.Setting) error {
		settings[s.ID] = s.Val
		return nil
	})
	return settings, err
}
