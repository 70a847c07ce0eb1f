package aggregator

import (
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/server"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// The aggregator's post-start hooks and check, named as kube-apiserver's.
const (
	authenticationInfoHook  = "start-cluster-authentication-info-controller"
	aggregatorInformersHook = "start-kube-aggregator-informers"
	registrationHook        = "apiservice-registration-controller"
	localAvailabilityHook   = "apiservice-status-local-available-controller"
	availabilityHook        = "apiservice-status-remote-available-controller"
	autoregistrationHook    = "kube-apiserver-autoregistration"
	openAPIHook             = "apiservice-openapi-controller"
	autoregisterCompletion  = "autoregister-completion"
)

// proxyCertValidity is how long the front-proxy client certificate a server signs
// for itself at start is valid.
const proxyCertValidity = 365 * 24 * time.Hour

// aggregatorHooks are the aggregator's post-start hooks, in kube-apiserver's order.
var aggregatorHooks = []string{authenticationInfoHook, aggregatorInformersHook, registrationHook,
	localAvailabilityHook, availabilityHook, autoregistrationHook, openAPIHook}

// The core/v1 and discovery.k8s.io/v1 resources the aggregator resolves backends
// through.
var (
	servicesGR       = schema.GroupResource{Resource: "services"}
	endpointSlicesGR = schema.GroupResource{Group: discoveryv1.GroupName, Resource: "endpointslices"}
)

// FeatureConfig is what the aggregator needs of the server: what it serves, the
// informers it reads APIServices, Services and EndpointSlices from, a client of
// itself, and the cluster's CAs.
type FeatureConfig struct {
	// Server is the server's: its Registry tells whether it serves what the
	// aggregator reads, and which group-versions it serves (their local APIServices,
	// kept as it changes); the aggregator starts the shared informers of APIServices,
	// Services and EndpointSlices; it writes APIServices' status, the local
	// APIServices and the extension-apiserver-authentication ConfigMap with the
	// server's own client; the ServerID names the server in the local APIServices;
	// the availability controller runs while the server leads its Election; its
	// controllers' samples go to ReconcileMetrics.
	feature.Server
	// Cluster are the cluster's credentials: its CA and its front-proxy
	// (request-header) CA are what the ConfigMap extension-apiserver-authentication
	// publishes, and the front-proxy CA signs the client certificate the proxy
	// presents to backends (valid for proxyCertValidity from NewFeature on).
	Cluster *auth.ClusterCredentials
	// IdentityLeases is an informer of the servers' identity leases, started by its
	// owner before Start (nil without them): a server whose lease has gone no longer
	// serves its group-versions' local APIServices.
	IdentityLeases cache.SharedIndexInformer
}

// Feature is the aggregator as one server runs it: the proxy and discovery of the
// aggregated APIs, its informers, controllers and post-start hooks.
type Feature struct {
	cfg       FeatureConfig
	agg       *Aggregator
	informers []cache.SharedIndexInformer
	client    kubernetes.Interface
	apiClient aggregatorclient.Interface
	// auto keeps the local APIServices; completion is its autoregister-completion
	// check.
	auto       *Autoregistration
	completion health.Checker
	hooks      map[string]*health.PostStartHook
}

// NewFeature builds the aggregator, whose informers read the object store; Start
// starts it. It returns nil, nil when the server does not serve APIServices, Services
// and EndpointSlices in v1: such a server is no aggregator.
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	for _, gr := range []schema.GroupResource{GroupResource, servicesGR, endpointSlicesGR} {
		if cfg.Registry.Served(gr, "v1") == nil {
			klog.Background().V(2).Info("Not an aggregator: a resource it reads is not served in v1", "resource", gr)
			return nil, nil
		}
	}
	cert, key, err := auth.NewFrontProxyClientCertificate(cfg.Cluster, proxyCertValidity)
	if err != nil {
		return nil, err
	}
	apiServices := cfg.Informers.Typed(GroupResource, func() runtime.Object { return &apiregistrationv1.APIService{} })
	services := cfg.Informers.Typed(servicesGR, func() runtime.Object { return &corev1.Service{} })
	slices := cfg.Informers.Typed(endpointSlicesGR, func() runtime.Object { return &discoveryv1.EndpointSlice{} })
	agg, err := New(Config{APIServices: apiServices, Services: services, EndpointSlices: slices,
		ProxyClientCert: cert, ProxyClientKey: key})
	if err != nil {
		return nil, err
	}
	f := &Feature{cfg: cfg, agg: agg, informers: []cache.SharedIndexInformer{apiServices, services, slices},
		hooks: map[string]*health.PostStartHook{}}
	loopback := cfg.LoopbackConfig()
	if f.client, err = kubernetes.NewForConfig(loopback); err != nil {
		return nil, err
	}
	if f.apiClient, err = aggregatorclient.NewForConfig(loopback); err != nil {
		return nil, err
	}
	f.auto, err = agg.NewAutoregistration(AutoregistrationConfig{
		ServerID: cfg.ServerID, Served: f.servedGroupVersions, Live: serverLive(cfg.IdentityLeases),
		Client: f.apiClient.ApiregistrationV1(), Metrics: cfg.ReconcileMetrics,
	})
	if err != nil {
		return nil, err
	}
	for _, name := range aggregatorHooks {
		f.hooks[name] = health.NewPostStartHook(name)
	}
	f.completion = health.NamedCheck(autoregisterCompletion, f.auto.Completion)
	return f, nil
}

// Checks are the aggregator's post-start hooks, in kube-apiserver's order, then the
// autoregister-completion check, for /healthz, /livez and /readyz.
func (f *Feature) Checks() []health.Checker {
	if f == nil {
		return nil
	}
	out := make([]health.Checker, 0, len(aggregatorHooks)+1)
	for _, name := range aggregatorHooks {
		out = append(out, f.hooks[name])
	}
	return append(out, f.completion)
}

// Aggregated is what the server's handler takes of the aggregator: the proxy of the
// aggregated group-versions and their discovery, merged into the server's (nil on a
// nil Feature: the server is no aggregator).
func (f *Feature) Aggregated() *server.Aggregated {
	if f == nil {
		return nil
	}
	return &server.Aggregated{Proxy: f.agg.Proxy, Discovery: f.agg.Discovery}
}

// ServiceResolver resolves the Services admission webhooks name, as it resolves
// APIServices' backends (nil on a nil Feature).
func (f *Feature) ServiceResolver() webhookutil.ServiceResolver {
	if f == nil {
		return nil
	}
	return f.agg
}

// SetOpenAPISink sets where the OpenAPI documents read from the backends go: the
// server's own documents merge them. Call it before Start. A nil Feature has no
// backends to read.
func (f *Feature) SetOpenAPISink(sink OpenAPISink) {
	if f != nil {
		f.agg.SetOpenAPISink(sink)
	}
}

// PublisherGroups returns the groups whose StorageVersions user may write as an
// aggregated server (see Aggregator.PublisherGroups): the StorageVersion API asks.
// None on a nil Feature: without the aggregator no server is aggregated.
func (f *Feature) PublisherGroups(user string) []string {
	if f == nil {
		return nil
	}
	return f.agg.PublisherGroups(user)
}

// servedGroupVersions returns the group-versions this server serves (but
// apiregistration.k8s.io's, which has no APIService in Kubernetes either).
func (f *Feature) servedGroupVersions() []ServedGroupVersion {
	seen := map[schema.GroupVersion]int{}
	var out []ServedGroupVersion
	for _, res := range f.cfg.Registry.Resources() {
		if res.Group == GroupResource.Group {
			continue
		}
		for _, v := range res.ServedVersions() {
			gv := schema.GroupVersion{Group: res.Group, Version: v}
			if at, ok := seen[gv]; ok {
				out[at].CRD = out[at].CRD && res.Owner != nil
				continue
			}
			seen[gv] = len(out)
			out = append(out, ServedGroupVersion{GroupVersion: gv, CRD: res.Owner != nil})
		}
	}
	return out
}

// serverLive returns whether the server of an ID runs: whether its identity lease
// exists in leases (it goes when the server stops, or once expired, when the elected
// collector removes it, so that every server decides alike; nil without identity
// leases).
func serverLive(leases cache.SharedIndexInformer) func(id string) bool {
	if leases == nil {
		return nil
	}
	return func(id string) bool {
		_, ok, err := leases.GetStore().GetByKey(identity.Namespace + "/" + id)
		return err == nil && ok
	}
}
