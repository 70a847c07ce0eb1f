package controlplane

import (
	"context"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/compatibility"
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
		Health: sv.checks, Metrics: c.st.metrics, FlowControl: fs.flowControl.Slot(),
		ExtraMetrics: append(prometheus.Gatherers{admission.Gatherer()}, fs.flowControl.Gatherers()...),
		Profiling:    o.Serving.Profiling, RequestTimeout: o.Serving.RequestTimeout, MaxBodyReadsPerUser: o.maxBodyReadsPerUser(),
		Version:    compat.VersionInfo(version.Info{}),
		ClientSkew: skew, WritesWhenReady: sv.gate, StorageVersionBarrier: fs.storageVersions.Barrier(),
		Aggregated: fs.aggregator.Aggregated(), DisableWatchList: !compat.Enabled(compatibility.WatchList),
		CBOR: compat.Enabled(compatibility.CBORServingAndStorage),
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
