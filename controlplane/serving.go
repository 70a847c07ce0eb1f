package controlplane

import (
	"context"
	"net/http"
	"time"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/flowcontrol"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/openapi"
	"github.com/concordproject/concord/server"
	"github.com/concordproject/concord/server/filters"
	"github.com/concordproject/concord/storageversion"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/version"
	k8sadmission "k8s.io/apiserver/pkg/admission"
)

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
// server with its handler chain (the storage version barrier in its slot), the
// service account issuer's discovery and the OpenAPI documents. The server serves
// until the components started after it (the controllers, the storage version
// manager's withdrawal of its entries) have stopped.
func startServing(ctx context.Context, g *lifecycle.Group, c *core, cr *credentials, fs *features) (*serving, error) {
	o, compat := c.opts, c.compat
	compat.RegisterMetrics(c.metrics)
	skew, err := compat.ClientSkewFilter(c.metrics)
	if err != nil {
		return nil, err
	}
	sv := &serving{informersHook: health.NewPostStartHook(informersHook)}
	if sv.checks, err = healthChecks(ctx, g, c, cr, fs, sv.informersHook); err != nil {
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
	sv.gate = writesWhenReady(sv.checks)
	fcFilter, extraMetrics := flowControlParts(fs.flowControl)
	var aggregated *server.Aggregated
	if fs.aggregator != nil {
		aggregated = fs.aggregator.Aggregated()
	}
	sv.server, err = server.New(server.Config{
		Registry: c.registry, Store: c.store, Authenticator: cr.authn, Authorizer: fs.authz, Audit: auditor,
		Health: sv.checks, Metrics: c.metrics, ExtraMetrics: extraMetrics, FlowControl: fcFilter,
		Profiling: o.Serving.Profiling, RequestTimeout: o.Serving.RequestTimeout, MaxBodyReadsPerUser: o.maxBodyReadsPerUser(),
		Version:    compat.VersionInfo(version.Info{}),
		ClientSkew: skew, WritesWhenReady: sv.gate, StorageVersionBarrier: fs.storageVersions.Barrier(),
		Aggregated: aggregated, DisableWatchList: !compat.Enabled(compatibility.WatchList),
		CBOR: compat.Enabled(compatibility.CBORServingAndStorage),
		// The annotations admission adds (admission policies' audit annotations and
		// Audit action) go to the request's audit event.
		Admission: k8sadmission.WithAudit(fs.admission.Chain()),
		TLS:       server.TLSConfig(cr.cert), Listener: cr.listener,
	})
	if err != nil {
		return nil, err
	}
	if err := fs.serviceAccounts.InstallDiscovery(sv.server.Mux()); err != nil {
		return nil, err
	}
	installOpenAPI(c, fs, sv.server)
	return sv, g.Start(ctx, sv.server.Component())
}

// writesWhenReadyWait bounds how long a write waits for a starting server to be
// ready before it gets 503 with Retry-After.
const writesWhenReadyWait = 10 * time.Second

// writesWhenReady returns the gate that holds clients' writes until the server has
// started: every post-start hook done and the informers synced. Ongoing conditions that
// /readyz also reports (etcd, the storage-migration definitions, KMS plugins) do not hold
// writes, nor does the storage version updater's hook: the barrier answers the writes
// it holds itself. The controllers phase runs it.
func writesWhenReady(checks *health.Endpoints) *filters.ReadyGate {
	started := func(c health.Checker) bool {
		_, hook := c.(*health.PostStartHook)
		return hook && c.Name() != health.PostStartHookPrefix+storageversion.UpdaterHook || c.Name() == InformerSyncCheck
	}
	return filters.NewReadyGate(func(ctx context.Context) error { return checks.Ready(ctx, started) }, ownRequest, writesWhenReadyWait)
}

// ownRequest reports whether r is the server's own (its loopback identity): its
// start-up writes make it ready, so they do not wait for readiness.
func ownRequest(r *http.Request) bool {
	u, _ := auth.UserFrom(r.Context())
	return u.Name == auth.LoopbackUser
}

// installOpenAPI serves the OpenAPI documents of the registry, and of the aggregated
// APIs as the aggregator reads them.
func installOpenAPI(c *core, fs *features, srv *server.Server) {
	docs := openapi.New(c.registry)
	if fs.aggregator != nil {
		fs.aggregator.SetOpenAPISink(docs.SetAggregated)
	}
	docs.InstallV2(srv.Mux())
	docs.InstallV3(srv.Mux())
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
