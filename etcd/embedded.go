package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// startAttempts bounds how often StartEmbedded picks fresh ports after losing a
// picked one to another process.
const startAttempts = 5

// Embedded is one running etcd member inside the Concord process. Its methods are safe
// for concurrent use.
type Embedded struct {
	etcd      *embed.Etcd
	logLevel  zap.AtomicLevel
	name      string
	endpoints []string
	peerURLs  []string

	closeOnce   sync.Once
	closing     chan struct{} // closed when Close begins
	monitorDone chan struct{} // closed when the monitor goroutine has returned
	errc        chan error    // at most one unexpected-stop error; closed by Close
}

// StartEmbedded starts the member cfg describes and waits until it has joined its
// cluster and serves clients. A member of a new multi-member cluster is ready only
// once a quorum of the members in InitialCluster is running, so those members must be
// started concurrently.
//
// Errors wrap ErrInvalidConfig for a bad cfg, ErrNotReady when the ready timeout
// passed, ErrStopped when the member stopped while starting, or the context's error.
// On error nothing is left running. ctx bounds the start only: the member runs until
// Close, which the caller must call.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithValues("member", cfg.name())
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("starting etcd member %q: %w", cfg.name(), context.Cause(ctx))
		}
		urls, err := cfg.resolveURLs()
		if err != nil {
			return nil, err
		}
		ecfg, logLevel, err := cfg.embedConfig(urls)
		if err != nil {
			return nil, err
		}
		e, err := embed.StartEtcd(ecfg)
		if err != nil {
			if urls.picked && attempt < startAttempts && errors.Is(err, syscall.EADDRINUSE) {
				logger.V(2).Info("A port picked for etcd was taken before etcd bound it; picking again", "attempt", attempt, "err", err)
				continue
			}
			return nil, fmt.Errorf("starting etcd member %q: %w", cfg.name(), err)
		}
		if err := waitReady(ctx, e, cfg.name(), cfg.readyTimeout()); err != nil {
			// Until the server is ready, embed.Etcd.Close waits for client servers that
			// only start once it is; stopping the server first releases them.
			quietShutdown(logLevel)
			e.Server.Stop()
			e.Close()
			return nil, err
		}
		m := newEmbedded(e, logLevel, cfg.name(), urls)
		logger.V(2).Info("etcd member is ready", "memberID", e.Server.MemberID().String(), "endpoints", m.endpoints, "peerURLs", m.peerURLs)
		return m, nil
	}
}

// embedConfig translates cfg and its resolved URLs into etcd's configuration. It
// returns the level of etcd's logger, so that shutdown can quieten it.
func (c *EmbeddedConfig) embedConfig(urls memberURLs) (*embed.Config, zap.AtomicLevel, error) {
	ec := embed.NewConfig()
	ec.Name = c.name()
	ec.Dir = c.dataDir()
	ec.ListenClientUrls = urls.listenClient
	ec.AdvertiseClientUrls = urls.advertiseClient
	ec.ListenPeerUrls = urls.listenPeer
	ec.AdvertisePeerUrls = urls.advertisePeer
	ec.InitialCluster = urls.initialCluster
	ec.ClusterState = orDefault(c.InitialClusterState, ClusterStateNew)
	ec.InitialClusterToken = orDefault(c.InitialClusterToken, DefaultInitialClusterToken)
	ec.ClientTLSInfo = tlsInfo(c.ClientTLS)
	ec.PeerTLSInfo = tlsInfo(c.PeerTLS)
	ec.QuotaBackendBytes = c.QuotaBackendBytes
	ec.AutoCompactionMode = c.compactionMode()
	ec.AutoCompactionRetention = orDefault(c.AutoCompactionRetention, embed.DefaultAutoCompactionRetention)
	ec.UnsafeNoFsync = c.UnsafeNoFsync
	if c.TickMs > 0 {
		ec.TickMs, ec.ElectionMs = c.TickMs, c.ElectionMs
	}
	ec.LogLevel = orDefault(c.LogLevel, DefaultLogLevel)

	// etcd's default logger, with a level this package can change later.
	level := zap.NewAtomicLevelAt(logutil.ConvertToZapLevel(ec.LogLevel))
	lcfg := logutil.DefaultZapLoggerConfig
	lcfg.Level = level
	logger, err := lcfg.Build(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return startupNoise{c} }))
	if err != nil {
		return nil, level, fmt.Errorf("building etcd's logger: %w", err)
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)

	// Validate also installs the logger; StartEtcd validates again, cheaply.
	if err := ec.Validate(); err != nil {
		return nil, level, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return ec, level, nil
}

// quietShutdown hides the errors etcd logs while a requested shutdown closes its
// listeners (it reports each one as a failure to serve), unless etcd was asked to log
// more than errors.
func quietShutdown(level zap.AtomicLevel) {
	if level.Level() >= zapcore.ErrorLevel {
		level.SetLevel(zapcore.PanicLevel)
	}
}

func tlsInfo(f TLSFiles) transport.TLSInfo {
	return transport.TLSInfo{
		CertFile:       f.CertFile,
		KeyFile:        f.KeyFile,
		TrustedCAFile:  f.TrustedCAFile,
		ClientCertAuth: f.ClientCertAuth,
	}
}

// waitReady waits until e serves, fails, times out (timeout < 0: never) or ctx ends.
func waitReady(ctx context.Context, e *embed.Etcd, name string, timeout time.Duration) error {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("%w: %q while starting: %w", ErrStopped, name, orStopped(err))
	case <-e.Server.StopNotify():
		return fmt.Errorf("%w: %q while starting", ErrStopped, name)
	case <-expired:
		return fmt.Errorf("%w: %q after %s; a member of a new cluster is ready once a quorum of its --initial-cluster is running", ErrNotReady, name, timeout)
	case <-ctx.Done():
		return fmt.Errorf("waiting for etcd member %q to become ready: %w", name, context.Cause(ctx))
	}
}

func orStopped(err error) error {
	if err == nil {
		return errors.New("serving ended")
	}
	return err
}

func newEmbedded(e *embed.Etcd, logLevel zap.AtomicLevel, name string, urls memberURLs) *Embedded {
	m := &Embedded{
		etcd:        e,
		logLevel:    logLevel,
		name:        name,
		closing:     make(chan struct{}),
		monitorDone: make(chan struct{}),
		errc:        make(chan error, 1),
	}
	for _, u := range urls.listenClient {
		m.endpoints = append(m.endpoints, loopbackEndpoint(u))
	}
	for _, u := range urls.advertisePeer {
		m.peerURLs = append(m.peerURLs, u.String())
	}
	go m.monitor()
	return m
}

// monitor reports the first sign that the member stopped without Close being called.
func (m *Embedded) monitor() {
	defer close(m.monitorDone)
	var err error
	select {
	case <-m.closing:
		return
	case serveErr := <-m.etcd.Err():
		err = fmt.Errorf("%w: %q: %w", ErrStopped, m.name, orStopped(serveErr))
	case <-m.etcd.Server.StopNotify():
		err = fmt.Errorf("%w: %q: the server stopped", ErrStopped, m.name)
	}
	select {
	case <-m.closing: // the stop was Close's doing
	default:
		m.errc <- err
	}
}

// Endpoints returns the client URLs the member listens on, with the ports that were
// picked for port 0 and wildcard hosts replaced by loopback addresses, so that a client
// in this process can dial every one of them.
func (m *Embedded) Endpoints() []string { return append([]string(nil), m.endpoints...) }

// PeerURLs returns the peer URLs the member advertises to its cluster, with picked
// ports filled in.
func (m *Embedded) PeerURLs() []string { return append([]string(nil), m.peerURLs...) }

// MemberID returns the member's ID in its cluster. It survives restarts on the same
// data directory.
func (m *Embedded) MemberID() uint64 { return uint64(m.etcd.Server.MemberID()) }

// ClientConfig returns a client configuration for Endpoints. For a member serving
// https, fill in the TLS files before use.
func (m *Embedded) ClientConfig() ClientConfig {
	return ClientConfig{Endpoints: m.Endpoints()}
}

// NewClient connects a new client to the member's Endpoints, as NewClient does with
// ClientConfig(). The caller must Close the client.
func (m *Embedded) NewClient(ctx context.Context) (*clientv3.Client, error) {
	return NewClient(ctx, m.ClientConfig())
}

// Err returns a channel that receives an error wrapping ErrStopped if the member
// stops without Close being called. It is closed once Close has returned; a receive
// of nil therefore means a requested stop.
func (m *Embedded) Err() <-chan error { return m.errc }

// Close stops the member, waits until its listeners are closed and its data is
// flushed, and closes Err. At the default log level, etcd's errors about the
// listeners being closed are not logged.
//
// A leader first hands its leadership to another member, waiting up to etcd's request
// timeout (several seconds) for one that is still running; so close the members of a
// cluster one after another, not all at once. It is idempotent and safe to call concurrently; every call
// returns after the shutdown is complete.
func (m *Embedded) Close() {
	m.closeOnce.Do(func() {
		close(m.closing)
		quietShutdown(m.logLevel)
		m.etcd.Close()
		<-m.monitorDone
		close(m.errc)
	})
}
