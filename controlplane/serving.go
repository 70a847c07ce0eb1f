package controlplane

import (
	"context"
	"slices"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/openapi"
	"github.com/concordproject/concord/server"
	"github.com/concordproject/concord/server/filters"
	"github.com/concordproject/concord/storageversion"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/version"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"
)

// informersHook is kube-apiserver's post-start hook of the informers a server starts
// before it serves (here RBAC's and service accounts'), done when the controllers
// phase begins: they have synced by then.
const informersHook = "generic-apiserver-start-informers"

// serving is what the serving phase hands the controllers phase: the server, its
// health checks, the gate that holds clients' writes until it is ready, and the hook
// of the informers started before it serves.
type serving struct {
	server        *server.Server
	checks        *health.Endpoints
	gate          *filters.ReadyGate
	informersHook *health.PostStartHook
}

// startServing is the serving phase: the health checks, the audit backends, the HTTP
// server with its handler chain (the storage version barrier in its slot, API
// priority and fairness in its own), the service account issuer's discovery and the
// OpenAPI documents of the registry and of the aggregated APIs, as the aggregator
// reads them. The server serves until the components started after it (the
// controllers, the storage version manager's withdrawal of its entries) have stopped.
func startServing(ctx context.Context, g *lifecycle.Group, c *core, fs *features) (*serving, error) {
	o, compat := c.opts, c.Compatibility
	compat.RegisterMetrics(c.st.metrics)
	skew, err := compat.ClientSkewFilter(c.st.metrics)
	if err != nil {
		return nil, err
	}
	sv := &serving{informersHook: health.NewPostStartHook(informersHook)}
	if sv.checks, err = healthChecks(ctx, g, c, fs, sv.informersHook); err != nil {
		return nil, err
	}
	auditor, err := audit.New(ctx, o.Audit)
	if err != nil {
		return nil, err
	}
	// Started before the HTTP server, stopped after it: it flushes what it buffers.
	if err := g.Start(ctx, lifecycle.Component{Name: "audit", Run: auditor.Run}); err != nil {
		return nil, err
	}
	// Clients' writes wait until the server has started, but not for the storage
	// version updater's hook: the barrier answers the writes it holds itself. The
	// controllers phase runs the gate.
	sv.gate = filters.NewStartGate(sv.checks, health.PostStartHookPrefix+storageversion.UpdaterHook)
	sv.server, err = server.New(server.Config{
		Registry: c.Registry, Store: c.Store, Authenticator: c.cr.authn, Authorizer: fs.authz, Audit: auditor,
		Health: sv.checks, Metrics: c.st.metrics, Version: compat.VersionInfo(version.Info{}),
		ExtraMetrics: append(prometheus.Gatherers{admission.Gatherer()}, fs.flowControl.Gatherers()...),
		FlowControl:  fs.flowControl.Slot(), Profiling: o.Serving.Profiling, RequestTimeout: o.Serving.RequestTimeout,
		HTTP2MaxStreams:     o.Serving.HTTP2MaxStreamsPerConnection,
		MaxBodyReadsPerUser: o.FlowControl.MaxBodyReadsPerUser(), ClientSkew: skew, WritesWhenReady: sv.gate,
		StorageVersionBarrier: fs.storageVersions.Barrier(), Aggregated: fs.aggregator.Aggregated(),
		DisableWatchList: !compat.Enabled(compatibility.WatchList), CBOR: compat.Enabled(compatibility.CBORServingAndStorage),
		// The annotations admission adds (admission policies' audit annotations and
		// Audit action) go to the request's audit event.
		Admission: k8sadmission.WithAudit(fs.admission.Chain()),
		TLS:       server.TLSConfig(c.cr.cert), Listener: c.cr.listener,
	})
	if err != nil {
		return nil, err
	}
	if err := fs.serviceAccounts.InstallDiscovery(sv.server.Mux()); err != nil {
		return nil, err
	}
	docs := openapi.New(c.Registry)
	fs.aggregator.SetOpenAPISink(docs.SetAggregated)
	docs.InstallV2(sv.server.Mux())
	docs.InstallV3(sv.server.Mux())
	return sv, g.Start(ctx, sv.server.Component())
}

// healthChecks builds /healthz, /livez and /readyz with the checks of
// kube-apiserver's names that this server has, in kube-apiserver's order: ping, the
// log, etcd, then each feature's post-start hooks and checks; /readyz adds the
// informers' sync, the storage version barrier's writes and storage migration's
// definitions. It starts the log check's flushes.
func healthChecks(ctx context.Context, g *lifecycle.Group, c *core, fs *features, informers *health.PostStartHook) (*health.Endpoints, error) {
	log := health.NewLog(klog.Flush, 0, 0)
	all := []health.Checker{health.Ping(), log, c.st.raw.HealthCheck()}
	for _, f := range feature.Present(fs.admission, feature.ChecksOnly{informers}, fs.flowControl, fs.crds, fs.namespaces,
		fs.identity, fs.storageVersions, fs.readiness, fs.rbac.Roles()) {
		all = append(all, f.Checks()...)
	}
	// kube-apiserver lists the system PriorityClasses' hook after the Service IP
	// repair controllers', before the kubernetes Service's.
	services := fs.services.Checks()
	all = append(all, slices.Insert(services, min(1, len(services)), fs.priorityClasses.Checks()...)...)
	for _, kms := range c.cr.encryption.HealthChecks() {
		all = append(all, kms)
	}
	all = append(all, fs.aggregator.Checks()...)
	checks := health.New(c.Metrics)
	for _, add := range []func(...health.Checker) error{checks.AddHealthz, checks.AddLivez, checks.AddReadyz} {
		if err := add(all...); err != nil {
			return nil, err
		}
	}
	readyOnly := slices.Concat([]health.Checker{c.Informers.Check(fs.admission.Synced)}, fs.storageVersions.ReadyChecks(),
		fs.migration.ReadyChecks())
	if err := checks.AddReadyz(readyOnly...); err != nil {
		return nil, err
	}
	return checks, g.Start(ctx, lifecycle.Component{Name: "log-flush", Run: log.Run})
}
