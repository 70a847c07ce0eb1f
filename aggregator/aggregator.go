package aggregator

import (
	"crypto/tls"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoveryv1listers "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1listers "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"
)

// ErrInvalidConfig means a Config lacks an informer or the client certificate.
var ErrInvalidConfig = errors.New("the aggregator needs informers of APIServices, Services and EndpointSlices, and a front-proxy client certificate")

// Config is what an Aggregator reads.
type Config struct {
	// APIServices, Services and EndpointSlices are informers of typed objects
	// (*apiregistrationv1.APIService, *corev1.Service, *discoveryv1.EndpointSlice),
	// started by the owner. EndpointSlices must index by namespace.
	APIServices, Services, EndpointSlices cache.SharedIndexInformer
	// ProxyClientCert and ProxyClientKey (PEM) are the front-proxy client certificate
	// the server presents to backends.
	ProxyClientCert, ProxyClientKey []byte
}

// Aggregator proxies aggregated group-versions to their backends and knows their
// discovery. It is safe for concurrent use.
type Aggregator struct {
	cfg         Config
	apiServices apiregistrationv1listers.APIServiceLister
	services    corev1listers.ServiceLister
	slices      discoveryv1listers.EndpointSliceLister
	clientCert  tls.Certificate

	mu         sync.Mutex
	routes     map[schema.GroupVersion]struct{} // kept by RunRegistration
	transports map[transportKey]*http.Transport
	discovery  map[schema.GroupVersion]*discovered
	openAPI    OpenAPISink // set before RunDiscovery
}

// New returns the aggregator of cfg.
func New(cfg Config) (*Aggregator, error) {
	if cfg.APIServices == nil || cfg.Services == nil || cfg.EndpointSlices == nil {
		return nil, ErrInvalidConfig
	}
	cert, err := tls.X509KeyPair(cfg.ProxyClientCert, cfg.ProxyClientKey)
	if err != nil {
		return nil, errors.Join(ErrInvalidConfig, err)
	}
	return &Aggregator{
		cfg:         cfg,
		apiServices: apiregistrationv1listers.NewAPIServiceLister(cfg.APIServices.GetIndexer()),
		services:    corev1listers.NewServiceLister(cfg.Services.GetIndexer()),
		slices:      discoveryv1listers.NewEndpointSliceLister(cfg.EndpointSlices.GetIndexer()),
		clientCert:  cert,
		routes:      map[schema.GroupVersion]struct{}{},
		transports:  map[transportKey]*http.Transport{},
		discovery:   map[schema.GroupVersion]*discovered{},
	}, nil
}

// remote returns the APIService that registers gv to a backend, or nil when gv is
// not registered or is served locally, or the registration controller has not
// routed it.
func (a *Aggregator) remote(gv schema.GroupVersion) *apiregistrationv1.APIService {
	if !a.routed(gv) {
		return nil
	}
	svc, err := a.apiServices.Get(gv.Version + "." + gv.Group)
	if err != nil || svc.Spec.Service == nil || svc.Spec.Group != gv.Group || svc.Spec.Version != gv.Version {
		return nil
	}
	return svc
}

// available reports whether svc's Available condition is True.
func available(svc *apiregistrationv1.APIService) (bool, *apiregistrationv1.APIServiceCondition) {
	for i := range svc.Status.Conditions {
		if c := &svc.Status.Conditions[i]; c.Type == apiregistrationv1.Available {
			return c.Status == apiregistrationv1.ConditionTrue, c
		}
	}
	return false, nil
}

// readyEndpoint reports whether an endpoint of a slice may take requests: Kubernetes
// counts one whose readiness is unknown as ready.
func readyEndpoint(e discoveryv1.Endpoint) bool {
	return len(e.Addresses) > 0 && (e.Conditions.Ready == nil || *e.Conditions.Ready)
}

// servicePort returns the port of svc whose number is port.
func servicePort(svc *corev1.Service, port int32) (corev1.ServicePort, bool) {
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return p, true
		}
	}
	return corev1.ServicePort{}, false
}

// AnnotationPublishers is the APIService annotation that names (comma-separated) the
// users that are its aggregated servers' identities: they may write the StorageVersions of its group
// (package storageversion/publisher), and nobody else but Concord's servers. It is
// Concord's: Kubernetes' APIService has no such field.
const AnnotationPublishers = "storageversion.concord.io/publishers"

// PublisherGroups returns the groups of the APIServices registered to a backend that
// name user among their publishers (AnnotationPublishers).
func (a *Aggregator) PublisherGroups(user string) []string {
	all, err := a.apiServices.List(labels.Everything())
	if err != nil {
		return nil
	}
	var groups []string
	for _, s := range all {
		if s.Spec.Service == nil || slices.Contains(groups, s.Spec.Group) {
			continue
		}
		for _, name := range strings.Split(s.Annotations[AnnotationPublishers], ",") {
			if strings.TrimSpace(name) == user && user != "" {
				groups = append(groups, s.Spec.Group)
				break
			}
		}
	}
	return groups
}
