package feature

import (
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/prometheus/client_golang/prometheus"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// ElectionLease is the Lease in kube-system of the servers' elected controllers
// (Server.Election).
const ElectionLease = "concord-controllers"

// Server is what every feature of a server is built with: made once, when the
// registry and the object store are, before any feature is built, and never changed.
// Each feature's NewFeature takes it: as its first argument, or embedded in its
// FeatureConfig beside what is the feature's own.
type Server struct {
	// Registry is the server's registry of served resources. It is filled after the
	// features that configure the built-in resources are built: those read it when
	// they run, the others may read it when they are built.
	Registry *registry.Registry
	// Store is the object store, which features read and write through.
	Store *store.Store
	// Informers are the shared in-process informers of the object store: an informer
	// started through them counts in the informer-sync check.
	Informers *informers.Shared
	// Loopback is the server's own client configuration (system:apiserver, exempt from
	// priority and fairness), client-side rate limits off. Every feature reads it
	// through LoopbackConfig, which gives it a copy of its own.
	Loopback *rest.Config
	// ServerID names the server: its identity lease, its candidate in elections.
	ServerID string
	// Election is the one leader election of the server's elected controllers (Lease
	// kube-system/concord-controllers, ElectionLease; a reconcile.Campaign the
	// composition root runs): each runs through it (reconcile.Elected, or
	// Election.RunElected), so that one server at a time runs them all and one Lease
	// is renewed for them. Its lease is half the identity lease duration, so that a
	// new leader is in place before a dead one's identity lease expires.
	Election reconcile.Elector
	// Compatibility is the server's KEP-4330 configuration: its versions (binary,
	// emulation, minimum compatibility) and feature gates.
	Compatibility *compatibility.Config
	// Metrics receives the features' own metrics, ReconcileMetrics their controllers'
	// reconcile samples.
	Metrics          prometheus.Registerer
	ReconcileMetrics *reconcile.Metrics
}

// LoopbackConfig returns a copy of the server's own client configuration (nil
// without one), which the caller may change.
func (s Server) LoopbackConfig() *rest.Config {
	if s.Loopback == nil {
		return nil
	}
	return rest.CopyConfig(s.Loopback)
}

// CloseIdleLoopback closes the connections of the server's clients of itself (every
// client made from a copy of Loopback shares client-go's transport) that no request
// is using. A server calls it once its controllers have stopped, before its HTTP
// server: Go's HTTP/2 server, shutting down, waits a second after its GOAWAY for the
// client to hang up each idle connection, and Go's client does not.
func (s Server) CloseIdleLoopback() {
	if s.Loopback == nil {
		return
	}
	if hc, err := rest.HTTPClientFor(s.Loopback); err == nil {
		utilnet.CloseIdleConnectionsFor(hc.Transport)
	}
}
