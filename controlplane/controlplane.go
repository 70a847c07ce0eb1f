package controlplane

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/encryption"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/server"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
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
	// Encryption is encryption at rest (--encryption-provider-config); nil: none.
	Encryption *encryption.Config

	loopbackToken string
	client        *clientv3.Client
	components    lifecycle.Group
	done          chan struct{}
	err           error
}

// Start assembles and starts a server through the phases of the package
// documentation, each starting the components the next ones need, and returns once
// it serves and its bootstrap is done. It stops when ctx is done (or a component
// fails): its components stop in the reverse order of their start, each joined
// before the next, etcd last.
func Start(ctx context.Context, o *Options) (_ *Instance, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	started := time.Now()
	inst := &Instance{done: make(chan struct{}), KubeconfigPath: o.kubeconfigPath()}
	defer func() {
		if err != nil {
			_ = inst.components.Stop()
		}
	}()
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating --data-dir: %w", err)
	}
	if ctx, err = inst.start(ctx, o, started); err != nil {
		return nil, err
	}
	if err := auth.WriteKubeconfig(inst.KubeconfigPath, inst.URL, inst.CACert, inst.AdminToken, ""); err != nil {
		return nil, fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	klog.FromContext(ctx).Info("Concord server ready", "url", inst.URL, "kubeconfig", inst.KubeconfigPath,
		"startup", time.Since(started).Round(time.Millisecond))
	go inst.stopWhenDone(ctx)
	return inst, nil
}

// start runs the phases, each with what the ones before it returned, and records what
// the Instance reports of them.
func (i *Instance) start(ctx context.Context, o *Options, started time.Time) (context.Context, error) {
	g := &i.components
	compat, builtins, err := configure(ctx, o)
	if err != nil {
		return ctx, err
	}
	st, err := startStorage(ctx, g, o)
	if err != nil {
		return ctx, err
	}
	ctx, cr, err := loadCredentials(ctx, g, o, st)
	if err != nil {
		return ctx, err
	}
	i.ServerID, i.URL, i.CACert, i.AdminToken, i.loopbackToken = cr.serverID, cr.url, cr.cluster.CACert, cr.cluster.AdminToken, cr.loopbackToken
	i.client, i.Metrics, i.Compatibility, i.Encryption = st.client, st.metrics, compat, cr.encryption
	c, err := newCore(o, compat, st, cr, i.LoopbackConfig(), started)
	if err != nil {
		return ctx, err
	}
	i.Registry, i.Store = c.Registry, c.Store
	fs, err := buildResources(ctx, g, c, builtins)
	if err != nil {
		return ctx, err
	}
	sv, err := startServing(ctx, g, c, fs)
	if err != nil {
		return ctx, err
	}
	i.Server = sv.server
	return ctx, startControllers(ctx, g, c, fs, sv)
}

// LoopbackConfig returns a client configuration with the server's own identity
// (system:apiserver), for in-process clients.
func (i *Instance) LoopbackConfig() *rest.Config {
	cfg := auth.RESTConfig(i.URL, i.CACert, i.loopbackToken)
	compatibility.IdentifyClient(cfg, i.Compatibility.ClientVersion())
	return cfg
}

// AdminConfig returns a client configuration with the admin credentials.
func (i *Instance) AdminConfig() *rest.Config {
	return auth.RESTConfig(i.URL, i.CACert, i.AdminToken)
}

// EtcdClient returns the etcd client the server stores through.
func (i *Instance) EtcdClient() *clientv3.Client { return i.client }

// Wait blocks until every component of the server has stopped, etcd last, and
// returns why it stopped (nil after a clean shutdown).
func (i *Instance) Wait() error {
	<-i.done
	return i.err
}

// Done is closed when the server has stopped.
func (i *Instance) Done() <-chan struct{} { return i.done }

// stopWhenDone stops every component once ctx is done or one of them failed.
func (i *Instance) stopWhenDone(ctx context.Context) {
	why := "asked to"
	select {
	case <-ctx.Done():
	case <-i.components.Failed():
		why = "a component failed"
	}
	// Components' requests in flight are cancelled from here on: client-go may log
	// that it could not read their responses.
	klog.FromContext(ctx).Info("Concord server stopping", "why", why)
	i.err = i.components.Stop()
	close(i.done)
}
