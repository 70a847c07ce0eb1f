// Package aggregator serves aggregated APIs: group-versions that an APIService
// (apiregistration.k8s.io/v1) registers to a backend, another API server that Concord
// fronts, as kube-aggregator does.
//
// # What it owns
//
//   - APIServices' behaviour: kube-aggregator's validation of spec and status
//     (Configure).
//   - Resolution of an APIService's backend: spec.service names a core/v1 Service,
//     whose port leads to a ready endpoint of its discovery.k8s.io/v1 EndpointSlices
//     (Concord serves both as data: the endpoints name host and port), or to its
//     externalName; TLS verified with spec.caBundle (server name
//     <service>.<namespace>.svc), or not at all with insecureSkipTLSVerify. The same
//     resolution finds the Services admission webhooks name (ResolveEndpoint).
//   - The proxy (Aggregator.Proxy): every request for a registered group-version,
//     after the handler chain has authenticated and authorized it, goes to the
//     backend with the user in the front-proxy headers (X-Remote-User, -Uid, -Group,
//     -Extra-*), under the front-proxy client certificate, the caller's credentials
//     and impersonation headers dropped. An unavailable backend, or one that cannot be
//     reached, is a 503 Status naming the APIService, at once or within the dial and
//     header timeouts, never a hang.
//   - The Available condition (Availability, leader-elected among the servers):
//     Local, ServiceNotFound, ServicePortError, EndpointsNotFound, MissingEndpoints,
//     FailedDiscoveryCheck or Passed, kube-aggregator's reasons.
//   - Discovery of the backends (Aggregator.RunDiscovery, on every server): each
//     backend's /apis/<group>/<version>, read periodically, as aggregated discovery
//     (apidiscovery.k8s.io/v2) that the server merges into its own, legacy and
//     aggregated.
//   - The request-header configuration aggregated servers read: the ConfigMap
//     kube-system/extension-apiserver-authentication (PublishAuthentication).
//
// # What it must not touch
//
// It serves no local resource and stores nothing but APIService status and the
// ConfigMap above; it reads APIServices, Services and EndpointSlices through
// informers its owner starts. It never decides who may do what: the handler chain
// authenticates and authorizes a request before the proxy sees it, and the backend
// authorizes it again.
package aggregator
