package controlplane

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/flowcontrol"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/openapi"
	"github.com/concordproject/concord/priorityclass"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/server"
	"github.com/concordproject/concord/server/filters"
	"github.com/concordproject/concord/storageversion"
	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// errNotListening: the HTTP server has not started listening yet.
var errNotListening = errors.New("not listening yet")

// startServing is the serving phase: the health checks, the HTTP server with its
// handler chain (the storage version barrier in its slot), and the OpenAPI documents.
// The server serves until the components started after it (the controllers, the
// storage version manager's withdrawal of its entries) have stopped.
func (i *Instance) startServing(ctx context.Context) (context.Context, error) {
	o, compat := i.opts, i.Compatibility
	compat.RegisterMetrics(i.Metrics)
	skew, err := compat.ClientSkewFilter(i.Metrics)
	if err != nil {
		return ctx, err
	}
	fc, err := i.newFlowControl()
	if err != nil {
		return ctx, err
	}
	aggregated, err := i.newAggregator()
	if err != nil {
		return ctx, err
	}
	chain, err := i.newAdmission()
	if err != nil {
		return ctx, err
	}
	pcs := priorityclass.FeatureConfig{Registry: i.Registry, Loopback: i.unlimitedLoopback()}
	if i.parts.priorityClasses, err = priorityclass.NewFeature(pcs); err != nil {
		return ctx, err
	}
	checks, err := i.healthChecks(ctx)
	if err != nil {
		return ctx, err
	}
	fcFilter, extraMetrics := flowControlParts(fc)
	auditor, err := audit.New(ctx, o.Audit)
	if err != nil {
		return ctx, err
	}
	// Started before the HTTP server, stopped after it: it flushes what it buffers.
	if err := i.start(ctx, lifecycle.Component{Name: "audit", Run: auditor.Run}); err != nil {
		return ctx, err
	}
	sv := i.parts.serving
	gate := i.writesWhenReady(checks)
	i.Server, err = server.New(server.Config{
		Registry:              i.Registry,
		Store:                 i.Store,
		Authenticator:         sv.authn,
		Authorizer:            i.parts.authz,
		Audit:                 auditor,
		Health:                checks,
		Metrics:               i.Metrics,
		ExtraMetrics:          extraMetrics,
		FlowControl:           fcFilter,
		Profiling:             o.Profiling,
		RequestTimeout:        o.RequestTimeout,
		MaxBodyReadsPerUser:   o.maxBodyReadsPerUser(),
		Version:               compat.VersionInfo(version.Info{GitVersion: gitVersion(compat)}),
		ClientSkew:            skew,
		WritesWhenReady:       gate,
		StorageVersionBarrier: i.parts.storageVersions.Barrier(),
		Aggregated:            aggregated,
		DisableWatchList:      !compat.Enabled(compatibility.WatchList),
		CBOR:                  compat.Enabled(compatibility.CBORServingAndStorage),
		// The annotations admission adds (admission policies' audit annotations and
		// Audit action) go to the request's audit event.
		Admission: k8sadmission.WithAudit(chain),
		TLS:       sv.tlsConfig(),
		Listener:  sv.listener,
	})
	if err != nil {
		return ctx, err
	}
	if err := i.parts.serviceAccounts.InstallDiscovery(i.Server.Mux()); err != nil {
		return ctx, err
	}
	i.installOpenAPI()
	listening := make(chan struct{})
	return ctx, i.start(ctx, lifecycle.Component{Name: "http-server",
		Run: func(ctx context.Context) error { return i.Server.Run(ctx, listening) },
		Ready: func() error {
			select {
			case <-listening:
				return nil
			default:
				return errNotListening
			}
		},
	})
}

// newAggregator builds the aggregator (none when the server does not serve what it
// reads) and returns what the handler takes of it; startControllers starts it.
func (i *Instance) newAggregator() (*server.Aggregated, error) {
	sv := i.parts.serving
	f, err := aggregator.NewFeature(aggregator.FeatureConfig{
		Registry: i.Registry, Informers: i.parts.informers, Loopback: i.unlimitedLoopback(),
		ReconcileMetrics: i.runtime, ServerID: i.ServerID, ClientCA: sv.clientCA, FrontProxyCA: sv.frontProxyCA,
		ProxyClientCert: sv.proxyCert, ProxyClientKey: sv.proxyKey, IdentityLeases: i.parts.identity.Leases(),
	})
	if err != nil || f == nil {
		return nil, err
	}
	i.parts.aggregator = f
	return f.Aggregated(), nil
}

// writesWhenReadyWait bounds how long a write waits for a starting server to be
// ready before it gets 503 with Retry-After.
const writesWhenReadyWait = 10 * time.Second

// writesWhenReady returns the gate that holds clients' writes until the server has
// started: every post-start hook done and the informers synced. Ongoing conditions that
// /readyz also reports (etcd, the storage-migration definitions, KMS plugins) do not hold
// writes, nor does the storage version updater's hook: the barrier answers the writes
// it holds itself. startControllers runs it.
func (i *Instance) writesWhenReady(checks *health.Endpoints) *filters.ReadyGate {
	started := func(c health.Checker) bool {
		_, hook := c.(*health.PostStartHook)
		return hook && c.Name() != health.PostStartHookPrefix+storageversion.UpdaterHook || c.Name() == InformerSyncCheck
	}
	gate := filters.NewReadyGate(func(ctx context.Context) error { return checks.Ready(ctx, started) }, ownRequest, writesWhenReadyWait)
	i.parts.readyGate = gate
	return gate
}

// ownRequest reports whether r is the server's own (its loopback identity): its
// start-up writes make it ready, so they do not wait for readiness.
func ownRequest(r *http.Request) bool {
	u, _ := auth.UserFrom(r.Context())
	return u.Name == auth.LoopbackUser
}

// flowSchemas is the resource API priority and fairness is configured with.
var flowSchemas = schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "flowschemas"}

// errNoFlowControlAPI: API priority and fairness is on but its API is not served.
var errNoFlowControlAPI = errors.New("--enable-priority-and-fairness needs flowcontrol.apiserver.k8s.io/v1 served (see --runtime-config), or pass --enable-priority-and-fairness=false")

// newFlowControl builds API priority and fairness (nil with
// --enable-priority-and-fairness=false); startControllers starts it.
func (i *Instance) newFlowControl() (*flowcontrol.Controller, error) {
	if !i.opts.FlowControl.Enable {
		return nil, nil
	}
	if i.Registry.Served(flowSchemas, "v1") == nil {
		return nil, errNoFlowControlAPI
	}
	fc, err := flowcontrol.New(flowcontrol.Config{RESTConfig: i.LoopbackConfig(), ConcurrencyLimit: i.opts.FlowControl.ConcurrencyLimit(), ReconcileMetrics: i.runtime})
	if err != nil {
		return nil, err
	}
	i.parts.flowControl = fc
	return fc, nil
}

// newAdmission builds the admission chain: RBAC's escalation check, kube-apiserver's
// own plugins of built-in resources, the admission policies and webhooks whose APIs
// are served (webhooks' Services resolved by the aggregator, if the server is one),
// then ResourceQuota admission if quotas are served; startControllers starts them.
func (i *Instance) newAdmission() (*admission.Chain, error) {
	q, err := quota.NewFeature(quota.FeatureConfig{Registry: i.Registry, Store: i.Store, Loopback: i.unlimitedLoopback(),
		ServerID: i.ServerID, ResyncPeriod: i.opts.ResourceQuotaSyncPeriod, ReconcileMetrics: i.runtime})
	if err != nil {
		return nil, err
	}
	i.parts.quota = q
	var validating []k8sadmission.ValidationInterface
	if q != nil {
		validating = append(validating, q.Admission())
	}
	var first []k8sadmission.ValidationInterface
	if f := i.parts.rbac; f != nil {
		// Kubernetes checks escalation in RBAC's storage, before any validating admission.
		first = append(first, f.EscalationCheck(i.parts.authz))
	}
	var resolver webhookutil.ServiceResolver
	if f := i.parts.aggregator; f != nil {
		resolver = f.ServiceResolver()
	}
	chain, err := admission.New(admission.Config{
		Registry: i.Registry, RESTConfig: i.LoopbackConfig(), ServerID: i.ServerID, ServiceResolver: resolver,
		CELVersion: i.Compatibility.Versions.MinCompatibility, Authorizer: i.parts.authz, ValidatingFirst: first, Validating: validating,
		MutatingPolicies: i.Compatibility.Enabled(compatibility.MutatingAdmissionPolicy),
		Builtin:          i.parts.semantics.Admission, FeatureGate: i.parts.semantics.FeatureGate(),
		Versions: i.Compatibility.Versions.Effective(),
	})
	if err != nil {
		return nil, err
	}
	i.parts.admission = chain
	return chain, nil
}

// installOpenAPI serves the OpenAPI documents of the registry, and of the aggregated
// APIs as the aggregator reads them.
func (i *Instance) installOpenAPI() {
	docs := openapi.New(i.Registry)
	if f := i.parts.aggregator; f != nil {
		f.SetOpenAPISink(docs.SetAggregated)
	}
	docs.InstallV2(i.Server.Mux())
	docs.InstallV3(i.Server.Mux())
}

// flowControlParts are the handler chain's priority-and-fairness filter (nil without
// API priority and fairness) and the metrics the server serves besides its own.
func flowControlParts(fc *flowcontrol.Controller) (func(http.Handler) http.Handler, prometheus.Gatherers) {
	extraMetrics := prometheus.Gatherers{admission.Gatherer()}
	if fc == nil {
		return nil, extraMetrics
	}
	return fc.Filter, append(extraMetrics, fc.Gatherer())
}
