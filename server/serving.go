package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/lifecycle"
	"github.com/spf13/pflag"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ServingOptions are the flags of where and how a server serves, kube-apiserver's:
// its address and port, the address it advertises, its certificate, the profiles it
// serves and how long a request may take.
type ServingOptions struct {
	// BindAddress and SecurePort are where the server listens (port 0: any free port).
	BindAddress string
	SecurePort  int
	// AdvertiseAddress is the address the server tells the cluster it serves on (the
	// kubernetes Service's endpoints); empty: BindAddress, or, when that is
	// unspecified (0.0.0.0, ::), the host's default interface address.
	AdvertiseAddress string
	// CertDir holds ca.crt and the generated serving certificate (default
	// <data-dir>/pki).
	CertDir string
	// TLSCertFile and TLSKeyFile bring your own serving certificate.
	TLSCertFile, TLSKeyFile string
	// Profiling serves Go's profiles at /debug/pprof/.
	Profiling bool
	// RequestTimeout bounds every request but watches, the reading of its body
	// included: past it the request is answered 504.
	RequestTimeout time.Duration
	// HTTP2MaxStreamsPerConnection is the most streams a client may have open at once
	// on one HTTP/2 connection (0: DefaultHTTP2MaxStreams).
	HTTP2MaxStreamsPerConnection int
}

// DefaultHTTP2MaxStreams is kube-apiserver's limit of concurrent HTTP/2 streams per
// connection: what Go's client assumes before the server's settings arrive, so that a
// client cannot open many more streams than the server allows before it learns the
// limit.
const DefaultHTTP2MaxStreams = 100

// NewServingOptions returns kube-apiserver's defaults, on the loopback address.
func NewServingOptions() ServingOptions {
	return ServingOptions{BindAddress: "127.0.0.1", SecurePort: 6443, Profiling: true, RequestTimeout: time.Minute}
}

// AddFlags binds the options to fs.
func (o *ServingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address to serve on.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port to serve HTTPS on (0 picks a free port).")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress,
		"IP address the server advertises to the cluster (the endpoints of the kubernetes Service); default --bind-address, or the host's default interface address when that is 0.0.0.0 or ::.")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "Directory of the CA and serving certificates (default <data-dir>/pki).")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "Serving certificate (PEM); generated when empty.")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "Private key of --tls-cert-file (PEM).")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go's CPU, heap, goroutine and execution-trace profiles at /debug/pprof/ to authorized clients.")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout,
		"How long a request but a watch may take, the reading of its body included, before it is answered 504 Timeout.")
	fs.IntVar(&o.HTTP2MaxStreamsPerConnection, "http2-max-streams-per-connection", o.HTTP2MaxStreamsPerConnection,
		"The most streams a client may have open at once on one HTTP/2 connection; a client that needs more opens another connection (0: 100, as kube-apiserver).")
}

// Validate reports each invalid option as one line saying what is allowed.
func (o *ServingOptions) Validate() []error {
	var errs []error
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", o.BindAddress))
	}
	if o.AdvertiseAddress != "" {
		if ip := net.ParseIP(o.AdvertiseAddress); ip == nil || ip.IsUnspecified() {
			errs = append(errs, fmt.Errorf("--advertise-address %q is not a specific IP address", o.AdvertiseAddress))
		}
	}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not between 0 and 65535", o.SecurePort))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file must be given together"))
	}
	for _, f := range []struct{ flag, path string }{{"--tls-cert-file", o.TLSCertFile}, {"--tls-private-key-file", o.TLSKeyFile}} {
		if f.path != "" {
			if _, err := os.Stat(f.path); err != nil {
				errs = append(errs, fmt.Errorf("%s %q cannot be read: %w", f.flag, f.path, err))
			}
		}
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %s must be positive", o.RequestTimeout))
	}
	if o.HTTP2MaxStreamsPerConnection < 0 {
		errs = append(errs, fmt.Errorf("--http2-max-streams-per-connection %d must not be negative (0: %d)", o.HTTP2MaxStreamsPerConnection, DefaultHTTP2MaxStreams))
	}
	return errs
}

// Listen listens on the bind address and port, and returns the listener with the
// https URL it is reached at (through 127.0.0.1 when the bind address is
// unspecified).
func (o *ServingOptions) Listen() (net.Listener, string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort)))
	if err != nil {
		return nil, "", fmt.Errorf("listening on %s:%d: %w", o.BindAddress, o.SecurePort, err)
	}
	host := o.BindAddress
	if ip := net.ParseIP(host); ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	return ln, (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, port)}).String(), nil
}

// Certificate loads --tls-cert-file, or the certificate the cluster CA signs for this
// host, kept in certDir (made the first time).
func (o *ServingOptions) Certificate(certDir string, creds *auth.ClusterCredentials, hostname string) (tls.Certificate, error) {
	certFile, keyFile := o.TLSCertFile, o.TLSKeyFile
	if certFile == "" {
		hosts := []string{o.BindAddress, "127.0.0.1", "::1", "localhost", hostname}
		var err error
		if certFile, keyFile, err = auth.EnsureServingCert(certDir, creds, hosts); err != nil {
			return tls.Certificate{}, fmt.Errorf("serving certificate: %w", err)
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading the serving certificate: %w", err)
	}
	return cert, nil
}

// Advertised returns where the server serves, for the cluster: --advertise-address
// (else --bind-address, else the host's default interface) and the port of its URL.
func (o *ServingOptions) Advertised(serverURL string) (netip.AddrPort, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return netip.AddrPort{}, err
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("the server's port %q: %w", u.Port(), err)
	}
	addr := o.AdvertiseAddress
	if addr == "" {
		addr = o.BindAddress
	}
	if ip := net.ParseIP(addr); ip == nil || ip.IsUnspecified() {
		host, err := utilnet.ChooseHostInterface()
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("choosing the address to advertise (set --advertise-address): %w", err)
		}
		addr = host.String()
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}

// TLSConfig serves cert over HTTP/2 and HTTP/1.1. Client certificates are asked for,
// and verified by the authentication.
func TLSConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"},
		ClientAuth: tls.RequestClientCert}
}

// errNotListening: the HTTP server has not started listening yet.
var errNotListening = errors.New("not listening yet")

// Component is the server as the lifecycle component http-server: it serves until
// stopped (Run), and is ready once it listens.
func (s *Server) Component() lifecycle.Component {
	listening := make(chan struct{})
	return lifecycle.Component{Name: "http-server",
		Run: func(ctx context.Context) error { return s.Run(ctx, listening) },
		Ready: func() error {
			select {
			case <-listening:
				return nil
			default:
				return errNotListening
			}
		},
	}
}
