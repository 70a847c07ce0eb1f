package etcd

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"k8s.io/klog/v2"
)

// Client tuning. The keep-alive settings are kube-apiserver's.
const (
	// DefaultDialTimeout is how long NewClient waits for the cluster to answer when
	// ClientConfig.DialTimeout is zero.
	DefaultDialTimeout = 10 * time.Second

	keepAliveTime    = 30 * time.Second
	keepAliveTimeout = 10 * time.Second
)

// probeKey is read, never written, by NewClient's reachability check; the read is
// count-only, so no data crosses the wire whatever the key holds.
const probeKey = "/concord/etcd-probe"

// ClientConfig says how to reach an etcd cluster run outside the Concord process.
type ClientConfig struct {
	// Endpoints are client URLs of the cluster's members (--etcd-servers), all http://
	// or all https://.
	Endpoints []string
	// CAFile verifies the members' serving certificates (--etcd-cafile); empty means
	// the system roots. Only for https endpoints.
	CAFile string
	// CertFile and KeyFile are the client certificate and key presented to the members
	// for mutual TLS (--etcd-certfile, --etcd-keyfile). Both or neither; only for https
	// endpoints.
	CertFile, KeyFile string
	// DialTimeout bounds connecting and NewClient's reachability check. Zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration
}

// AddFlags binds --etcd-servers, --etcd-cafile, --etcd-certfile and --etcd-keyfile,
// spelled as kube-apiserver spells them, to c. The current values of c are the
// defaults.
func (c *ClientConfig) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.Endpoints, "etcd-servers", c.Endpoints,
		"Comma-separated client URLs (http:// or https://) of the etcd cluster to store data in.")
	fs.StringVar(&c.CAFile, "etcd-cafile", c.CAFile,
		"PEM file of the certificate authorities that sign the etcd members' serving certificates.")
	fs.StringVar(&c.CertFile, "etcd-certfile", c.CertFile,
		"PEM client certificate presented to etcd (mutual TLS); needs --etcd-keyfile.")
	fs.StringVar(&c.KeyFile, "etcd-keyfile", c.KeyFile,
		"PEM private key of --etcd-certfile.")
}

// Validate reports the first invalid field as an error wrapping ErrInvalidConfig,
// naming the flag and what it allows. It does not read the TLS files.
func (c *ClientConfig) Validate() error {
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("%w: --etcd-servers is empty: want at least one http:// or https:// URL", ErrInvalidConfig)
	}
	scheme := ""
	for _, ep := range c.Endpoints {
		u, err := parseURL(ep, urlRules{})
		if err != nil || u.Port() == "0" {
			return fmt.Errorf("%w: --etcd-servers %q: want scheme://host:port with scheme http or https", ErrInvalidConfig, ep)
		}
		if scheme != "" && u.Scheme != scheme {
			return fmt.Errorf("%w: --etcd-servers %s: want all http:// or all https://", ErrInvalidConfig, strings.Join(c.Endpoints, ","))
		}
		scheme = u.Scheme
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("%w: --etcd-certfile and --etcd-keyfile must be given together", ErrInvalidConfig)
	}
	if c.hasTLS() && scheme != "https" {
		return fmt.Errorf("%w: --etcd-cafile, --etcd-certfile and --etcd-keyfile need https:// --etcd-servers, not %s", ErrInvalidConfig, strings.Join(c.Endpoints, ","))
	}
	if c.DialTimeout < 0 {
		return fmt.Errorf("%w: dial timeout %s: want a positive duration, or zero for %s", ErrInvalidConfig, c.DialTimeout, DefaultDialTimeout)
	}
	return nil
}

// https reports whether the endpoints (all of one scheme, once validated) are https.
func (c *ClientConfig) https() bool {
	u, err := parseURL(c.Endpoints[0], urlRules{})
	return err == nil && u.Scheme == "https"
}

func (c *ClientConfig) hasTLS() bool {
	return c.CAFile != "" || c.CertFile != "" || c.KeyFile != ""
}

// tlsConfig loads the TLS files; nil means none were given.
func (c *ClientConfig) tlsConfig() (*tls.Config, error) {
	if !c.hasTLS() {
		return nil, nil
	}
	info := transport.TLSInfo{CertFile: c.CertFile, KeyFile: c.KeyFile, TrustedCAFile: c.CAFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: loading etcd client TLS files: %w", ErrInvalidConfig, err)
	}
	return cfg, nil
}

func (c *ClientConfig) dialTimeout() time.Duration {
	if c.DialTimeout == 0 {
		return DefaultDialTimeout
	}
	return c.DialTimeout
}

// NewClient connects to the cluster cfg names and returns once a quorum has answered
// a linearizable read, so that the client is known to work. ctx bounds only this
// start-up, not the client's life; the caller must Close the client.
//
// The client stays with the cluster that answered first: a reconnection to an
// endpoint where a member of another cluster answers is refused (see clusterPin), and
// the endpoint counts as down until its own cluster is back there.
//
// Errors wrap ErrInvalidConfig for a bad cfg or unreadable TLS files, and
// ErrUnreachable, naming the endpoints, when the cluster did not answer within the
// dial timeout.
func NewClient(ctx context.Context, cfg ClientConfig) (*clientv3.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	logger, err := logutil.CreateDefaultZapLogger(zap.ErrorLevel)
	if err != nil {
		return nil, fmt.Errorf("building the etcd client logger: %w", err)
	}
	endpoints := strings.Join(cfg.Endpoints, ",")
	timeout := cfg.dialTimeout()
	pin := newClusterPin(cfg.https(), tlsCfg, klog.FromContext(ctx).WithValues("etcd", endpoints))
	client, err := clientv3.New(clientv3.Config{
		Endpoints:            cfg.Endpoints,
		TLS:                  tlsCfg,
		DialTimeout:          timeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		Logger:               logger,
		DialOptions: []grpc.DialOption{
			grpc.WithContextDialer(pin.dial),
			grpc.WithStaticStreamWindowSize(staticWindow),
			grpc.WithStaticConnWindowSize(staticWindow),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: minConnectTimeout}),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: connecting to %s: %w", ErrUnreachable, endpoints, err)
	}

	probeCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := client.Get(probeCtx, probeKey, clientv3.WithCountOnly()); err != nil {
		_ = client.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connecting to etcd at %s: %w", endpoints, context.Cause(ctx))
		}
		return nil, fmt.Errorf("%w: no answer from %s within %s: %w", ErrUnreachable, endpoints, timeout, err)
	}
	return client, nil
}

// reconnectBackoff spaces the client's attempts to connect again to an etcd it lost:
// gRPC's defaults but for the longest wait, 5s instead of 2 minutes, so that a server
// serves again within seconds of etcd coming back after an outage of a minute or
// more (with the defaults, a server cut off for 80s waited up to 40s more after etcd
// was back). An attempt is one TCP and TLS handshake per endpoint: cheap for etcd.
var reconnectBackoff = backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second}

// minConnectTimeout is gRPC's default: how long one attempt to connect may take.
const minConnectTimeout = 20 * time.Second

// staticWindow is the flow-control window of the client's gRPC connection and of
// each of its streams, fixed, as large as gRPC's dynamic windows ever grow (its BDP
// estimator stops at 16 MiB), so that large ranges and watch bursts are never held
// back by flow control. Fixed windows spare every answer the bandwidth probe (a ping
// to etcd and its acknowledgement) that dynamic windows send whenever data arrives:
// measured on the storage-migration client path at concurrency 1, 60 µs less etcd CPU
// per write and about 4% more writes per second (docs/benchmarks.md).
const staticWindow = 16 << 20
