package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"
)

// Config is everything a Server needs. Fields without a default are required.
type Config struct {
	// Registry holds the resources served; it may change while serving (CRDs).
	Registry *registry.Registry
	// Store persists objects.
	Store *registry.Store
	// Authenticator authenticates bearer tokens.
	Authenticator *auth.TokenAuthenticator
	// Health holds the health checks; the server adds its own.
	Health *health.Endpoints
	// Metrics registers the server's metrics and serves /metrics.
	Metrics *prometheus.Registry
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
	// RequestTimeout bounds non-watch requests (default 60s).
	RequestTimeout time.Duration
	// MaxWatchTimeout bounds watches without timeoutSeconds (default 30 min, with
	// jitter as Kubernetes does).
	MaxWatchTimeout time.Duration
	// ShutdownTimeout bounds the graceful drain of requests and watches (default 30s).
	ShutdownTimeout time.Duration
	// Filters wrap the resource handlers, innermost last, after authentication and
	// authorization (the storage-version write barrier is one).
	Filters []func(http.Handler) http.Handler
}

// Server is one Concord API server. Create it with New, then call Run.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	handler http.Handler
	metrics *requestMetrics

	mu        sync.Mutex
	listener  net.Listener
	watchStop chan struct{}
}

// New builds a server from cfg, applying defaults.
func New(cfg Config) (*Server, error) {
	if cfg.Registry == nil || cfg.Store == nil || cfg.Authenticator == nil {
		return nil, errors.New("server: Registry, Store and Authenticator are required")
	}
	if cfg.Health == nil {
		cfg.Health = health.New(cfg.Metrics)
	}
	if cfg.MaxRequestBodyBytes == 0 {
		cfg.MaxRequestBodyBytes = 3 << 20
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
	s.metrics = newRequestMetrics(cfg.Metrics)
	s.install()
	s.handler = s.buildChain()
	return s, nil
}

// Handler returns the full handler chain (for in-process use and tests).
func (s *Server) Handler() http.Handler { return s.handler }

// Mux is where handlers outside the REST API (e.g. /openapi/v3) are installed; they
// sit behind the whole filter chain. Install them before Run.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// publicPaths may be read without credentials.
func publicPath(p string) bool {
	for _, prefix := range []string{"/healthz", "/livez", "/readyz"} {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			return true
		}
	}
	return p == "/version" || p == "/version/"
}

func (s *Server) install() {
	s.cfg.Health.Install(s.mux)
	s.mux.Handle("/version", http.HandlerFunc(s.serveVersion))
	s.mux.Handle("/version/", http.HandlerFunc(s.serveVersion))
	if s.cfg.Metrics != nil {
		s.mux.Handle("/metrics", promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}))
	}
	if s.cfg.Profiling {
		s.mux.HandleFunc("/debug/pprof/", pprof.Index)
		s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	var api http.Handler = http.HandlerFunc(s.serveAPI)
	for i := len(s.cfg.Filters) - 1; i >= 0; i-- {
		api = s.cfg.Filters[i](api)
	}
	s.mux.Handle("/api", api)
	s.mux.Handle("/api/", api)
	s.mux.Handle("/apis", api)
	s.mux.Handle("/apis/", api)
	s.mux.Handle(wire.RewritePath, http.HandlerFunc(s.serveRewrite))
	s.mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, apierrors.NewNotFound(schemaGR(""), r.URL.Path))
	}))
}

// buildChain wraps the mux in the filters every request passes, outermost first:
// panic recovery, request info, metrics, timeout, body limit, authentication,
// authorization.
func (s *Server) buildChain() http.Handler {
	var h http.Handler = s.mux
	h = s.withAuthorization(h)
	h = auth.WithAuthentication(h, s.cfg.Authenticator, publicPath)
	h = withBodyLimit(h, s.cfg.MaxRequestBodyBytes)
	h = s.withTimeout(h)
	h = s.metrics.instrument(h)
	h = withRequestInfo(h)
	h = withRecovery(h)
	return h
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
