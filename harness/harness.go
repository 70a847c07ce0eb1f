package harness

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Option changes how a cluster is started.
type Option func(*config)

type config struct {
	serverOpts       []func(i int, o *controlplane.Options)
	storageMigration bool
}

// WithStorageMigration runs the storage-migration controllers (trigger and migrator)
// in every server, as `concord server` does by default. Without it the harness starts
// servers with Options.DisableStorageMigration set: a fresh cluster's first
// migrations, one per served resource, cost more CPU than most tests do, and only
// tests of migration look at them. WithServerOptions is applied after, and wins.
func WithStorageMigration() Option {
	return func(c *config) { c.storageMigration = true }
}

// WithServerOptions lets a test change the options of server i before it starts.
func WithServerOptions(f func(i int, o *controlplane.Options)) Option {
	return func(c *config) { c.serverOpts = append(c.serverOpts, f) }
}

// Cluster is one etcd and the servers sharing it.
type Cluster struct {
	// Etcd is the embedded etcd member all servers store in.
	Etcd *etcd.Embedded
	// EtcdClient reads and writes etcd directly (to check what is really stored).
	EtcdClient *clientv3.Client
	// Servers are the API servers, in start order.
	Servers []*Server

	cfg  config
	dir  string
	logs *logs
}

// Server is one API server of a Cluster.
type Server struct {
	*controlplane.Instance
	// Options are the options the server was started with; Restart reuses them.
	Options *controlplane.Options
	Index   int

	logs *logs

	mu     sync.Mutex
	cancel context.CancelFunc
}

// Start starts an etcd and n servers, and registers their shutdown with t.Cleanup.
// It fails the test if anything does not start.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{dir: t.TempDir(), logs: newLogs(t)}
	for _, o := range opts {
		o(&c.cfg)
	}
	ctx := context.WithoutCancel(t.Context())
	m, err := etcd.StartLoopback(ctx, filepath.Join(c.dir, "etcd"), etcd.WithUnsafeNoFsync())
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	cleanup(t, m.Close)
	c.Etcd = m
	if c.EtcdClient, err = m.NewClient(ctx); err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	cleanup(t, func() { _ = c.EtcdClient.Close() })
	for i := 0; i < n; i++ {
		c.AddServer(t)
	}
	return c
}

// LogOnFailure prints to t, if t fails, the servers' log from now on. A cluster's own
// test prints its whole log when it fails; a test that shares a cluster started by
// another test (a subtest of it) calls LogOnFailure to get the lines written while it
// ran, other tests' lines among them.
func (c *Cluster) LogOnFailure(t testing.TB) {
	from := c.logs.end()
	l := c.logs
	cleanup(t, func() {
		if t.Failed() {
			l.printSince(t, from)
		}
	})
}

// AddServer starts one more server sharing the cluster's etcd.
func (c *Cluster) AddServer(t testing.TB) *Server {
	t.Helper()
	i := len(c.Servers)
	o := controlplane.NewOptions()
	o.DataDir = filepath.Join(c.dir, fmt.Sprintf("server-%d", i))
	o.Serving.SecurePort = 0
	o.Etcd.Endpoints = c.Etcd.Endpoints()
	o.DisableStorageMigration = !c.cfg.storageMigration
	for _, f := range c.cfg.serverOpts {
		f(i, o)
	}
	s := &Server{Options: o, Index: i, logs: c.logs}
	s.start(t)
	c.Servers = append(c.Servers, s)
	return s
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(t.Context()), s.logs.logger(s.Index)))
	inst, err := controlplane.Start(ctx, s.Options)
	if err != nil {
		cancel()
		t.Fatalf("starting server %d: %v", s.Index, err)
	}
	s.mu.Lock()
	s.Instance, s.cancel = inst, cancel
	s.mu.Unlock()
	// A restart must come back on the same port, so that its ID and URL stay.
	s.Options.Serving.SecurePort = portOf(inst.URL)
	cleanup(t, func() { s.Stop(t) })
}

// Stop shuts the server down gracefully and waits for it. Stopping a stopped server
// does nothing.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	cancel, inst := s.cancel, s.Instance
	s.cancel = nil
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case <-inst.Done():
		if err := inst.Wait(); err != nil {
			t.Errorf("server %d stopped with: %v", s.Index, err)
		}
	// A deadline timer: a server that does not stop in a minute is a failure.
	case <-time.After(60 * time.Second):
		t.Errorf("server %d did not stop within 60s", s.Index)
	}
}

// Restart stops the server and starts it again with the same options (data
// directory, port, ID).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	s.start(t)
}

// Clientset returns a typed client-go clientset with the admin credentials.
func (s *Server) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.config())
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return cs
}

// Dynamic returns a dynamic client with the admin credentials.
func (s *Server) Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	dc, err := dynamic.NewForConfig(s.config())
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	return dc
}

// Metadata returns a metadata client with the admin credentials.
func (s *Server) Metadata(t testing.TB) metadata.Interface {
	t.Helper()
	mc, err := metadata.NewForConfig(s.config())
	if err != nil {
		t.Fatalf("metadata client: %v", err)
	}
	return mc
}

// Config returns a rest.Config with the admin credentials, tuned for tests (no
// client-side rate limit).
func (s *Server) Config() *rest.Config { return s.config() }

func (s *Server) config() *rest.Config {
	s.mu.Lock()
	inst := s.Instance
	s.mu.Unlock()
	cfg := inst.AdminConfig()
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

func portOf(rawURL string) int {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

// cleanup registers f with t.Cleanup and lets go of f once it has run. The testing
// package keeps every parallel test, with the cleanups it ran, until the whole run
// ends: a cluster held by its cleanups would stay in memory after its test (etcd's
// buffers, every server's stores and caches), and a package that starts a few hundred
// clusters would carry all of them to the end.
func cleanup(t testing.TB, f func()) {
	held := &f
	t.Cleanup(func() {
		run := *held
		*held = nil
		run()
	})
}
