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
//   - The registration of APIServices in the proxy (RunRegistration, every server): a
//     group-version is proxied once the controller has seen an APIService register it
//     to a backend, and no longer once it is deleted or local (its transports closed).
//   - The Available condition: of remote APIServices (RunAvailability,
//     leader-elected among the servers) ServiceNotFound, ServicePortError,
//     EndpointsNotFound, MissingEndpoints, FailedDiscoveryCheck or Passed,
//     kube-aggregator's reasons; of local ones (RunLocalAvailability, every server)
//     Local.
//   - Local APIServices (Autoregistration, every server): one per group-version the
//     server serves, as kube-aggregator's auto-registration keeps them
//     (kube-apiserver's priorities, LabelAutoManaged), the servers that serve it in
//     AnnotationServedBy, removed once no live server does; and the
//     autoregister-completion check.
//   - Discovery of the backends (Aggregator.RunDiscovery, on every server): each
//     backend's /apis/<group>/<version>, read periodically, as aggregated discovery
//     (apidiscovery.k8s.io/v2) that the server merges into its own, legacy and
//     aggregated.
//   - The request-header configuration aggregated servers read: the ConfigMap
//     kube-system/extension-apiserver-authentication (PublishAuthentication).
//   - Its wiring in a server (Feature): NewFeature builds the aggregator, with the
//     front-proxy client certificate its proxy presents (signed by the cluster's
//     front-proxy CA), and its post-start hooks of kube-apiserver's names, Start starts
//     its informers and controllers in order; the server takes its proxy and
//     discovery, its resolver of webhooks' Services, its OpenAPI sink and its
//     StorageVersion publishers.
//
// # What it must not touch
//
// It serves no local resource and stores nothing but APIService status, the local
// APIServices and the ConfigMap above; local APIServices (spec.service unset) are never
// proxied nor counted as aggregated groups; it reads APIServices, Services and
// EndpointSlices through the server's shared informers (package informers). It never
// decides who may do what: the handler chain authenticates and authorizes a request
// before the proxy sees it, and the backend authorizes it again.
package aggregator
