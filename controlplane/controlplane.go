package controlplane

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/encryption"
	"github.com/concordproject/concord/flowcontrol"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/priorityclass"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/rbac"
	"github.com/concordproject/concord/rbac/bootstrap"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/server"
	"github.com/concordproject/concord/server/filters"
	"github.com/concordproject/concord/service"
	"github.com/concordproject/concord/serviceaccount/tokens"
	"github.com/concordproject/concord/storage"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/storageversion/publisher"
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

	opts          *Options
	started       time.Time
	components    lifecycle.Group
	loopbackToken string
	client        *clientv3.Client
	raw           *storage.Store
	runtime       *reconcile.Metrics
	parts         parts
	done          chan struct{}
	err           error
}

// parts are what one phase of Start builds for a later one.
type parts struct {
	// builtins are the built-in resources the compatibility configuration selects:
	// configure → resources.
	builtins []*registry.Resource
	serving  serving // credentials → serving
	// identity is the identity lease and the informer of every server's (nil with
	// APIServerIdentity off), storageVersions their collector and the storage version
	// manager (nil likewise), crds the CRD controller: resources → serving (checks,
	// barrier) → controllers, which start them.
	identity        *identity.Feature
	storageVersions *storageversion.Feature
	crds            *apiextensions.Feature
	// namespaces are the namespace controllers, storageReadiness the watch caches'
	// readiness, migration storage migration (nil with --disable-storage-migration):
	// resources → serving (their checks) → controllers, which start them.
	namespaces       *namespace.Feature
	storageReadiness *store.Readiness
	migration        *migration.Feature
	checks           *health.Endpoints
	// readyGate holds clients' writes until the server has been ready once: serving →
	// controllers, which runs it.
	readyGate *filters.ReadyGate
	// flowControl is API priority and fairness (nil when off): serving → controllers.
	flowControl *flowcontrol.Controller
	// quota is ResourceQuotas' admission and usage controller (nil when quotas are not
	// served): serving → controllers.
	quota *quota.Feature
	// priorityClasses makes the system PriorityClasses (nil when they are not served):
	// serving → controllers.
	priorityClasses *priorityclass.Feature
	// admission is the admission chain: serving → controllers.
	admission *admission.Chain
	// semantics are Kubernetes' rules for built-in resources, at the server's gates:
	// resources → serving (kube's certificate admission).
	semantics *kubesemantics.Semantics
	// authz is the server's authorizer; rbac and rbacBootstrap are RBAC and its
	// bootstrap roles (nil without --authorization-mode=RBAC): resources → serving,
	// controllers.
	authz         *auth.Authorization
	rbac          *rbac.Feature
	rbacBootstrap *bootstrap.Feature
	// serviceAccounts is service account tokens: resources → serving.
	serviceAccounts *tokens.Feature
	// aggregator is the aggregator feature (nil when APIServices, Services or
	// EndpointSlices are not served in v1): serving → controllers.
	aggregator *aggregator.Feature
	// mirror publishes the server's entries to the aggregator it runs behind
	// (--aggregator-kubeconfig; nil otherwise): resources → controllers.
	mirror *publisher.Publisher
	// hooks are the post-start hooks by name (serving → controllers, which finishes
	// them); log is the log check, whose flush runs from the serving phase.
	hooks map[string]*health.PostStartHook
	log   *health.Log
	// informerChecks report whether the client informers of components (admission,
	// quota admission) have synced: the informer-sync check.
	informerChecks []func() error
	// informers are the in-process informers shared by the server's components.
	informers *informers.Shared
	// services allocates Services' cluster IPs and node ports (nil when Services,
	// IPAddresses, ServiceCIDRs and EndpointSlices are not all served in v1): resources
	// → controllers.
	services *service.Feature
}

// LoopbackConfig returns a client configuration with the server's own identity
// (system:apiserver), for in-process clients.
func (i *Instance) LoopbackConfig() *rest.Config {
	cfg := auth.RESTConfig(i.URL, i.CACert, i.loopbackToken)
	compatibility.IdentifyClient(cfg, i.Compatibility.ClientVersion())
	return cfg
}

// unlimitedLoopback is LoopbackConfig without client-side rate limits: the loopback
// identity is exempt from priority and fairness too.
func (i *Instance) unlimitedLoopback() *rest.Config {
	cfg := i.LoopbackConfig()
	cfg.QPS = -1
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

// Start assembles and starts a server, and returns once it serves and its bootstrap
// is done. It stops when ctx is done (or a component fails): its components stop in
// the reverse order of their start, each joined before the next, etcd last.
//
// The phases, each starting the components the next ones need:
//
//  0. configure: the compatibility configuration and the checks that depend on it,
//     before anything is started or written;
//  1. storage: the embedded etcd, or a client of an external cluster;
//  2. credentials: the listener (its port names the server), the cluster CA and
//     admin token shared through etcd, the serving certificate, the tokens;
//  3. resources: the built-in resources, the registry and the object store, the
//     check that this release may join the servers sharing etcd (identity.CheckJoin),
//     the identity lease, the storage version manager, the CRD controller and the
//     other components whose checks serving lists (namespace controllers, storage
//     readiness, storage migration);
//  4. serving: health checks and the HTTP server with its handler chain;
//  5. controllers: the system namespaces, the identity lease, the storage version
//     manager and its garbage collector, the CRD controller (ready once every stored
//     definition is served), admission, the bootstrap roles and PriorityClasses, the
//     Services' allocation controllers and the kubernetes Service, the aggregator
//     (local APIServices registered), the namespace controller, storage migration.
//
// Each post-start hook of kube-apiserver's name (/healthz, /livez, /readyz) is
// finished by the component that does its job, once it has started or synced.
func Start(ctx context.Context, o *Options) (_ *Instance, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	inst := &Instance{opts: o, started: time.Now(), done: make(chan struct{}), KubeconfigPath: o.kubeconfigPath()}
	defer func() {
		if err != nil {
			_ = inst.components.Stop()
		}
	}()
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating --data-dir: %w", err)
	}
	for _, phase := range []func(context.Context) (context.Context, error){
		inst.configure, inst.startStorage, inst.loadCredentials, inst.buildResources, inst.startServing, inst.startControllers,
	} {
		if ctx, err = phase(ctx); err != nil {
			return nil, err
		}
	}
	if err := auth.WriteKubeconfig(inst.KubeconfigPath, inst.URL, inst.CACert, inst.AdminToken, ""); err != nil {
		return nil, fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	klog.FromContext(ctx).Info("Concord server ready", "url", inst.URL, "kubeconfig", inst.KubeconfigPath,
		"startup", time.Since(inst.started).Round(time.Millisecond))
	go inst.stopWhenDone(ctx)
	return inst, nil
}

// start starts one component; Start's failure stops those started before.
func (i *Instance) start(ctx context.Context, c lifecycle.Component) error {
	return i.components.Start(ctx, c)
}

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

// closer is a component that holds a resource and releases it when stopped.
func closer(name string, release func()) lifecycle.Component {
	return lifecycle.Component{Name: name, Run: func(ctx context.Context) error {
		<-ctx.Done()
		release()
		return nil
	}}
}
