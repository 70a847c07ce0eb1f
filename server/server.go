package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	"github.com/concordproject/concord/server/filters"
	"github.com/concordproject/concord/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
)

// Config is everything a Server needs. Fields without a default are required.
type Config struct {
	// Registry holds the resources served; it may change while serving (CRDs).
	Registry *registry.Registry
	// Store persists objects.
	Store *store.Store
	// Authenticator authenticates bearer tokens.
	Authenticator auth.RequestAuthenticator
	// Audit audits requests (nil: nothing is audited, requests still get an
	// Audit-ID).
	Audit *audit.Auditor
	// Authorizer decides every request after authentication (auth.NewAuthorization:
	// the --authorization-mode modes).
	Authorizer authorizer.Authorizer
	// Health holds the health checks; the server adds its own.
	Health *health.Endpoints
	// Metrics registers the server's metrics and serves /metrics.
	Metrics *prometheus.Registry
	// ExtraMetrics, if set, are served on /metrics after Metrics: metrics that
	// libraries keep in registries of their own (API priority and fairness).
	ExtraMetrics prometheus.Gatherer
	// Profiling serves Go's profiles under /debug/pprof/ (as kube-apiserver's
	// --profiling), to authenticated and authorized clients only.
	Profiling bool
	// Version is served at /version.
	Version version.Info
	// TLS is the serving configuration (certificates).
	TLS *tls.Config
	// Listener, if set, is used instead of listening on Address.
	Listener net.Listener
	// Address is host:port to listen on when Listener is nil.
	Address string
	// MaxRequestBodyBytes limits request bodies (default 3 MiB, like Kubernetes).
	MaxRequestBodyBytes int64
	// MaxBodyReadsPerUser caps the requests of one user whose bodies are still
	// arriving (0: no cap); see filters.RequestBody.
	MaxBodyReadsPerUser int
	// RequestTimeout bounds non-watch requests (default 60s).
	RequestTimeout time.Duration
	// HTTP2MaxStreams is the most streams a client may have open at once on one
	// HTTP/2 connection (default DefaultHTTP2MaxStreams).
	HTTP2MaxStreams int
	// MaxWatchTimeout bounds watches without timeoutSeconds (default 30 min, with
	// jitter as Kubernetes does).
	MaxWatchTimeout time.Duration
	// ShutdownTimeout bounds the graceful drain of requests and watches (default 30s).
	ShutdownTimeout time.Duration
	// FlowControl, if set, fills the chain's "priority-and-fairness" slot, between
	// impersonation and authorization: it classifies, queues and limits requests
	// (package flowcontrol).
	FlowControl func(http.Handler) http.Handler
	// ClientSkew, if set, fills the chain's "client-skew" slot: it sees every
	// authorized request (package compatibility's version skew detector).
	ClientSkew func(http.Handler) http.Handler
	// WritesWhenReady, if set, fills the chain's "ready-for-writes" slot: it holds
	// clients' writes until the server's start-up is done.
	WritesWhenReady *filters.ReadyGate
	// StorageVersionBarrier, if set, fills the chain's "storage-version-barrier" slot,
	// the last before the handlers: it holds writes of a resource until this server's
	// storage version for it is registered (package storageversion).
	StorageVersionBarrier func(http.Handler) http.Handler
	// Aggregated, if set, is what the server fronts: the group-versions that
	// APIServices register to other API servers (package aggregator).
	Aggregated *Aggregated
	// Admission, if set, is the admission of creations and updates (package
	// admission's chain): as an admission.MutationInterface it may change each object
	// before the store prepares and validates it; as an admission.ValidationInterface
	// it sees each object after validation, before it is stored.
	Admission admission.Interface
	// CBOR accepts and serves application/cbor (KEP-4222), as kube-apiserver does
	// while its CBORServingAndStorage feature gate is on; off, a CBOR body is a 415
	// and a client that accepts only CBOR gets 406.
	CBOR bool
	// DisableWatchList refuses watches that ask for their starting state
	// (sendInitialEvents), as Kubernetes does while its WatchList feature gate is off.
	DisableWatchList bool
}

// Aggregated is how the server fronts group-versions other API servers serve.
type Aggregated struct {
	// Proxy returns the handler of every request for group-version gv (its
	// discovery, /apis/<group>/<version>, included) when another server serves gv,
	// else nil. It sees the request after the whole handler chain.
	Proxy func(gv schema.GroupVersion) http.Handler
	// Discovery returns the aggregated discovery of those group-versions, merged into
	// the server's own (/apis, /apis/<group>, aggregated or not) after its groups.
	Discovery func() []apidiscoveryv2.APIGroupDiscovery
}

// Server is one Concord API server. Create it with New, then call Run.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	handler http.Handler
	chain   []filters.Filter
	metrics *watchMetrics

	mu        sync.Mutex
	listener  net.Listener
	watchStop chan struct{}
}

// New builds a server from cfg, applying defaults.
func New(cfg Config) (*Server, error) {
	if cfg.Registry == nil || cfg.Store == nil || cfg.Authenticator == nil || cfg.Authorizer == nil {
		return nil, errors.New("server: Registry, Store, Authenticator and Authorizer are required")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	if cfg.Health == nil {
		cfg.Health = health.New(cfg.Metrics)
	}
	if cfg.MaxRequestBodyBytes == 0 {
		cfg.MaxRequestBodyBytes = 3 << 20
	}
	if cfg.HTTP2MaxStreams == 0 {
		cfg.HTTP2MaxStreams = DefaultHTTP2MaxStreams
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 60 * time.Second
	}
	if cfg.MaxWatchTimeout == 0 {
		cfg.MaxWatchTimeout = 30 * time.Minute
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), watchStop: make(chan struct{})}
	s.metrics = newWatchMetrics(cfg.Metrics)
	s.install()
	s.chain = s.buildChain()
	s.handler = filters.Build(exactPaths(s.mux, http.HandlerFunc(s.serveAPI)), s.chain)
	return s, nil
}

// exactPaths routes a request by its path as sent, never cleaned. API paths (/api,
// /apis and below) go to api, which reads them segment by segment as kube-apiserver
// does (an empty namespace segment lists every namespace; a "." or ".." name is a
// 400). Other paths go to mux, but only clean ones: ServeMux answers a path with
// empty, "." or ".." segments with a redirect to its clean form, which would have
// the request the chain authorized and audited for one URL answered for another;
// such a path is a 404 Status instead, as kube-apiserver answers it.
func exactPaths(mux *http.ServeMux, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/api" || p == "/apis" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/") {
			api.ServeHTTP(w, r)
			return
		}
		if p != "" && p != cleanPath(p) {
			respond.Error(w, r, apierrors.NewNotFound(schema.GroupResource{}, p))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// cleanPath is p with its empty, "." and ".." segments resolved, as ServeMux cleans
// it: rooted, and with its trailing slash kept.
func cleanPath(p string) string {
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// Handler returns the full handler chain (for in-process use and tests).
func (s *Server) Handler() http.Handler { return s.handler }

// Mux is where handlers outside the REST API (e.g. /openapi/v3) are installed; they
// sit behind the whole handler chain, like every handler. Install them before Run.
func (s *Server) Mux() *http.ServeMux { return s.mux }

func (s *Server) install() {
	s.cfg.Health.Install(s.mux)
	s.mux.Handle("/version", http.HandlerFunc(s.serveVersion))
	s.mux.Handle("/version/", http.HandlerFunc(s.serveVersion))
	var gatherer prometheus.Gatherer = s.cfg.Metrics
	if s.cfg.ExtraMetrics != nil {
		gatherer = prometheus.Gatherers{s.cfg.Metrics, s.cfg.ExtraMetrics}
	}
	s.mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	if s.cfg.Profiling {
		s.mux.HandleFunc("/debug/pprof/", pprof.Index)
		s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	api := http.HandlerFunc(s.serveAPI)
	s.mux.Handle("/api", api)
	s.mux.Handle("/api/", api)
	s.mux.Handle("/apis", api)
	s.mux.Handle("/apis/", api)
	s.mux.Handle(wire.RewritePath, http.HandlerFunc(s.serveRewrite))
	s.mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond.Error(w, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
	}))
}

// Run serves until ctx is done, then shuts down gracefully: /readyz fails, new
// requests are refused, in-flight requests and watches are drained (watches are told
// to end), all within ShutdownTimeout. ready, if not nil, is closed once listening.
func (s *Server) Run(ctx context.Context, ready chan<- struct{}) error {
	logger := klog.FromContext(ctx)
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Address); err != nil {
			return fmt.Errorf("listening on %s: %w", s.cfg.Address, err)
		}
	}
	s.mu.Lock()
	s.listener = ln
	s.mu.Unlock()
	srv := &http.Server{
		Handler:           s.handler,
		TLSConfig:         s.cfg.TLS,
		ReadHeaderTimeout: 32 * time.Second,
		MaxHeaderBytes:    1 << 20,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: s.cfg.HTTP2MaxStreams},
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          nil,
	}
	srv.BaseContext = func(net.Listener) context.Context { return klog.NewContext(context.WithoutCancel(ctx), logger) }
	errc := make(chan error, 1)
	go func() {
		if s.cfg.TLS != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	if ready != nil {
		close(ready)
	}
	logger.Info("Serving", "address", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("Shutting down: draining requests and watches")
	s.cfg.Health.ShuttingDown()
	close(s.watchStop)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	return nil
}

// Addr returns the address the server listens on, once Run has started.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}
