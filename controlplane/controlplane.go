package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/openapi"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/server"
	"github.com/concordproject/concord/storage"
	"github.com/concordproject/concord/storageversion"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Instance is a running server. Stop it by cancelling the context given to Start,
// then Wait.
type Instance struct {
	// ServerID identifies the server.
	ServerID string
	// URL is the https URL the server answers on.
	URL string
	// CACert is the PEM of the cluster CA that signs the serving certificate.
	CACert []byte
	// AdminToken is the cluster's admin bearer token (group system:masters).
	AdminToken string
	// KubeconfigPath is where the admin kubeconfig was written.
	KubeconfigPath string
	// Registry, Store and Server are the assembled parts.
	Registry *registry.Registry
	Store    *store.Store
	Server   *server.Server
	// Metrics is the server's Prometheus registry.
	Metrics *prometheus.Registry
	// Compatibility is the resolved KEP-4330 configuration: versions, feature gates,
	// served APIs.
	Compatibility *compatibility.Config

	loopbackToken string
	etcd          *etcd.Embedded
	client        *clientv3.Client
	done          chan struct{}
	err           error
}

// LoopbackConfig returns a client configuration with the server's own identity
// (system:apiserver), for in-process clients.
func (i *Instance) LoopbackConfig() *rest.Config {
	cfg := auth.RESTConfig(i.URL, i.CACert, i.loopbackToken)
	cfg.WrapTransport = compatibility.WrapTransport(i.Compatibility.ClientVersion())
	return cfg
}

// AdminConfig returns a client configuration with the admin credentials.
func (i *Instance) AdminConfig() *rest.Config {
	return auth.RESTConfig(i.URL, i.CACert, i.AdminToken)
}

// EtcdClient returns the etcd client the server stores through.
func (i *Instance) EtcdClient() *clientv3.Client { return i.client }

// Wait blocks until the server has stopped and returns why it stopped (nil after a
// clean shutdown).
func (i *Instance) Wait() error {
	<-i.done
	return i.err
}

// Done is closed when the server has stopped.
func (i *Instance) Done() <-chan struct{} { return i.done }

// Start assembles and starts a server, and returns once it is listening and its
// bootstrap is done. It stops when ctx is done.
func Start(ctx context.Context, o *Options) (_ *Instance, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	started := time.Now()
	inst := &Instance{done: make(chan struct{}), KubeconfigPath: o.kubeconfigPath()}
	var cleanups []func()
	defer func() {
		if err != nil {
			for i := len(cleanups) - 1; i >= 0; i-- {
				cleanups[i]()
			}
		}
	}()
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating --data-dir: %w", err)
	}

	// 1. Storage.
	if len(o.Etcd.Endpoints) == 0 {
		var opts []etcd.LoopbackOption
		if o.EtcdUnsafeNoFsync {
			opts = append(opts, etcd.WithUnsafeNoFsync())
		}
		m, err := etcd.StartLoopback(ctx, filepath.Join(o.DataDir, "etcd"), opts...)
		if err != nil {
			return nil, fmt.Errorf("starting the embedded etcd: %w", err)
		}
		inst.etcd = m
		cleanups = append(cleanups, m.Close)
		if inst.client, err = m.NewClient(ctx); err != nil {
			return nil, err
		}
	} else {
		if inst.client, err = etcd.NewClient(ctx, o.Etcd); err != nil {
			return nil, err
		}
	}
	cleanups = append(cleanups, func() { _ = inst.client.Close() })
	inst.Metrics = prometheus.NewRegistry()
	inst.Metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	raw := storage.New(inst.client, o.EtcdPrefix).WithMetrics(storage.NewMetrics(inst.Metrics))

	// 2. Listener first, so that the port is known for the server ID and the URL.
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("listening on %s:%d: %w", o.BindAddress, o.SecurePort, err)
	}
	cleanups = append(cleanups, func() { _ = ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	host := o.BindAddress
	if ip := net.ParseIP(host); ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	inst.URL = (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port))}).String()
	inst.ServerID = o.ServerID
	if inst.ServerID == "" {
		hostname, _ := os.Hostname()
		inst.ServerID = identity.DefaultServerID(hostname, port)
	}
	logger = logger.WithValues("server", inst.ServerID)
	ctx = klog.NewContext(ctx, logger)

	// 3. Credentials.
	creds, err := auth.EnsureClusterCredentials(ctx, inst.client, o.EtcdPrefix+"/concord/credentials", o.certDir())
	if err != nil {
		return nil, fmt.Errorf("cluster credentials: %w", err)
	}
	inst.CACert, inst.AdminToken = creds.CACert, creds.AdminToken
	certFile, keyFile := o.TLSCertFile, o.TLSKeyFile
	if certFile == "" {
		hostname, _ := os.Hostname()
		hosts := []string{o.BindAddress, "127.0.0.1", "::1", "localhost", hostname}
		if certFile, keyFile, err = auth.EnsureServingCert(o.certDir(), creds, hosts); err != nil {
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the serving certificate: %w", err)
	}
	var fileTokens map[string]auth.User
	if o.TokenAuthFile != "" {
		if fileTokens, err = auth.LoadTokenFile(o.TokenAuthFile); err != nil {
			return nil, err
		}
	}
	inst.loopbackToken = auth.NewLoopbackToken()
	authn, err := auth.NewTokenAuthenticator(fileTokens, creds.AdminToken, inst.loopbackToken)
	if err != nil {
		return nil, err
	}

	// 4. Resources and the store.
	compat, err := o.Compatibility.Complete(ctx)
	if err != nil {
		return nil, err
	}
	inst.Compatibility = compat
	builtins, err := compat.Resources()
	if err != nil {
		return nil, err
	}
	if err := builtin.Configure(builtins, builtin.Options{EventTTL: o.EventTTL}); err != nil {
		return nil, err
	}
	inst.Registry = registry.New()
	for _, res := range builtins {
		if err := inst.Registry.Put(ctx, res); err != nil {
			return nil, fmt.Errorf("registering %s: %w", res.GroupResource(), err)
		}
	}
	if err := inst.Registry.Put(ctx, apiextensions.Resource()); err != nil {
		return nil, fmt.Errorf("registering %s: %w", apiextensions.GroupResource, err)
	}
	inst.Store = store.NewStore(raw)
	if o.WatchBookmarkInterval > 0 {
		inst.Store.BookmarkInterval = o.WatchBookmarkInterval
	}

	// 5. Identity and storage versions (KEP-1965, KEP-2339), then the HTTP server.
	lease, svm, err := newIdentity(inst, o, compat, started)
	if err != nil {
		return nil, err
	}
	compat.RegisterMetrics(inst.Metrics)
	skew, err := compat.ClientSkewFilter(inst.Metrics)
	if err != nil {
		return nil, err
	}
	checks := health.New(inst.Metrics)
	etcdCheck := health.NamedCheck("etcd", func(r *http.Request) error {
		cctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		_, err := raw.CurrentRevision(cctx)
		return err
	})
	bootstrap := health.NewPostStartHook("bootstrap-namespaces")
	hooks := []health.Checker{health.Ping(), etcdCheck, bootstrap}
	leaseHook := health.NewPostStartHook(identity.LeaseControllerHook)
	collectorHook := health.NewPostStartHook(identity.LeaseCollectorHook)
	if lease != nil {
		hooks = append(hooks, leaseHook, collectorHook)
	}
	if svm != nil {
		hooks = append(hooks, svm.PostStartHook())
	}
	for _, add := range []func(...health.Checker) error{checks.AddHealthz, checks.AddLivez, checks.AddReadyz} {
		if err := add(hooks...); err != nil {
			return nil, err
		}
	}
	inst.Server, err = server.New(server.Config{
		Registry:              inst.Registry,
		Store:                 inst.Store,
		Authenticator:         authn,
		Health:                checks,
		Metrics:               inst.Metrics,
		Profiling:             o.Profiling,
		Version:               compat.VersionInfo(version.Info{GitVersion: gitVersion(compat)}),
		ClientSkew:            skew,
		StorageVersionBarrier: barrier(svm),
		TLS:                   &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}},
		Listener:              ln,
	})
	if err != nil {
		return nil, err
	}
	docs := openapi.New(inst.Registry)
	docs.InstallV2(inst.Server.Mux())
	docs.InstallV3(inst.Server.Mux())
	go docs.Run(ctx)
	go func() { _ = inst.Store.Run(ctx) }()
	// The server serves until the identity work of a graceful shutdown is done (see
	// withdraw), not only until ctx is done.
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	cleanups = append(cleanups, stopServing)
	ready := make(chan struct{})
	serveErr := make(chan error, 1)
	go func() { serveErr <- inst.Server.Run(serveCtx, ready) }()
	select {
	case <-ready:
	case err := <-serveErr:
		return nil, err
	}

	// 6. Bootstrap and controllers.
	if err := bootstrapNamespaces(ctx, inst); err != nil {
		return nil, err
	}
	var collectorDone chan struct{}
	if lease != nil {
		if err := lease.Start(ctx); err != nil {
			return nil, err
		}
		leaseHook.Done()
		collector, err := storageversion.NewCollector(storageversion.CollectorConfig{
			Registry: inst.Registry, Store: inst.Store, Holder: lease.HolderIdentity(), RESTConfig: inst.LoopbackConfig(),
			LeaseDuration: lease.Duration(), Metrics: inst.Metrics,
		})
		if err != nil {
			return nil, err
		}
		collectorDone = make(chan struct{})
		go func() {
			defer close(collectorDone)
			collector.Run(ctx)
		}()
		collectorHook.Done()
	}
	if svm != nil {
		if err := svm.Start(ctx); err != nil {
			return nil, fmt.Errorf("registering storage versions: %w", err)
		}
	}
	crds := apiextensions.NewController(inst.Registry, inst.Store)
	if svm != nil {
		crds.Publish = svm.Publish
	}
	go crds.Run(ctx)
	select {
	case <-crds.Synced():
	case <-ctx.Done():
		return nil, fmt.Errorf("serving the stored CustomResourceDefinitions: %w", context.Cause(ctx))
	}
	if svm != nil {
		// Every built-in resource has had one registration attempt: writes to those
		// registered pass; the others stay refused (and readyz says why) while their
		// registration is retried.
		if err := svm.WaitFirstRound(ctx); err != nil {
			return nil, fmt.Errorf("registering storage versions: %w", err)
		}
		if err := svm.ResourcesSynced(ctx); err != nil {
			logger.Error(err, "Cannot withdraw the storage version entries of resources this server no longer serves; they stay until it restarts")
		}
	}
	go func() {
		<-ctx.Done()
		withdraw(logger, svm, collectorDone, lease)
		stopServing()
	}()
	bootstrap.Done()
	go namespace.NewController(inst.Registry, inst.Store).Run(ctx, 2)
	if !o.DisableStorageMigration {
		// Leader-elected among the servers: one of them triggers and runs migrations.
		go func() {
			if err := migration.Run(ctx, migration.Config{RESTConfig: inst.LoopbackConfig(), Metrics: inst.Metrics}); err != nil {
				logger.Error(err, "Storage migration controllers stopped")
			}
		}()
	}
	if err := auth.WriteKubeconfig(inst.KubeconfigPath, inst.URL, inst.CACert, inst.AdminToken, ""); err != nil {
		return nil, fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	logger.Info("Concord server ready", "url", inst.URL, "kubeconfig", inst.KubeconfigPath, "startup", time.Since(started).Round(time.Millisecond))

	go func() {
		err := <-serveErr
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		_ = inst.client.Close()
		if inst.etcd != nil {
			inst.etcd.Close()
		}
		inst.err = err
		close(inst.done)
	}()
	return inst, nil
}

// newIdentity builds the identity lease (APIServerIdentity) and the storage version
// manager (StorageVersionAPI, which depends on it) of a server, nil when disabled.
func newIdentity(inst *Instance, o *Options, compat *compatibility.Config, started time.Time) (*identity.Lease, *storageversion.Manager, error) {
	if !compat.Enabled(compatibility.APIServerIdentity) {
		if compat.Enabled(compatibility.StorageVersionAPI) {
			return nil, nil, fmt.Errorf("feature gate %s requires %s", compatibility.StorageVersionAPI, compatibility.APIServerIdentity)
		}
		return nil, nil, nil
	}
	var svm *storageversion.Manager
	hostname, _ := os.Hostname()
	v := compat.Versions
	lease, err := identity.NewLease(inst.Registry, inst.Store, identity.Config{
		ID: inst.ServerID, Hostname: hostname,
		Duration: o.IdentityLeaseDuration, RenewInterval: o.IdentityLeaseRenewInterval,
		BinaryVersion: v.Binary.String(), EmulationVersion: v.Emulation.String(), MinCompatibilityVersion: v.MinCompatibility.String(),
		Lapsed: func() {
			if svm != nil {
				svm.Lapsed()
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	if !compat.Enabled(compatibility.StorageVersionAPI) {
		return lease, nil, nil
	}
	svm, err = storageversion.NewManager(storageversion.Config{
		ServerID: inst.ServerID, Registry: inst.Registry, Store: inst.Store,
		LeaseValid: lease.Valid, Metrics: inst.Metrics, Started: started,
	})
	if err != nil {
		return nil, nil, err
	}
	return lease, svm, nil
}

// barrier returns the storage version barrier of svm, nil without one.
func barrier(svm *storageversion.Manager) func(http.Handler) http.Handler {
	if svm == nil {
		return nil
	}
	return svm.Filter
}

// withdraw is the identity part of a graceful shutdown, done while the server still
// serves: its storage version entries are withdrawn (writes of tracked resources are
// refused from then on), the garbage collection leadership released, and its identity
// lease deleted, so that peers and a rolling upgrade need not wait for the lease to
// expire.
func withdraw(logger klog.Logger, svm *storageversion.Manager, collectorDone <-chan struct{}, lease *identity.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	defer func() { logger.V(2).Info("Identity withdrawn", "duration", time.Since(start)) }()
	if svm != nil {
		if err := svm.Shutdown(ctx); err != nil {
			logger.Error(err, "Cannot withdraw every storage version entry; the garbage collector removes the rest once the identity lease expires")
		}
	}
	if collectorDone != nil {
		select {
		case <-collectorDone:
		case <-ctx.Done():
		}
	}
	if lease != nil {
		if err := lease.Release(ctx); err != nil {
			logger.Error(err, "Cannot delete the identity lease; it expires by itself")
		}
	}
}

// bootstrapNamespaces creates the namespaces every Kubernetes cluster has.
func bootstrapNamespaces(ctx context.Context, inst *Instance) error {
	res := inst.Registry.Get(namespace.GroupResource)
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
		obj.SetName(name)
		if _, err := inst.Store.Create(ctx, store.Ref{Resource: res, Version: "v1"}, obj, store.WriteOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}
