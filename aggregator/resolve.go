package aggregator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Reasons of the Available condition, kube-aggregator's.
const (
	ReasonLocal                = "Local"
	ReasonPassed               = "Passed"
	ReasonServiceNotFound      = "ServiceNotFound"
	ReasonServicePortError     = "ServicePortError"
	ReasonEndpointsNotFound    = "EndpointsNotFound"
	ReasonMissingEndpoints     = "MissingEndpoints"
	ReasonFailedDiscoveryCheck = "FailedDiscoveryCheck"
)

// ErrUnresolved means an APIService's backend cannot be found; the error says why,
// and reasonOf gives the Available condition's reason.
var ErrUnresolved = errors.New("backend not resolved")

// unresolved is why a backend cannot be found.
type unresolved struct {
	reason, message string
}

func (u *unresolved) Error() string { return u.message }

func (u *unresolved) Unwrap() error { return ErrUnresolved }

// reasonOf returns the Available condition's reason for err, a failure to resolve or
// to reach a backend.
func reasonOf(err error) string {
	var u *unresolved
	if errors.As(err, &u) {
		return u.reason
	}
	return ReasonFailedDiscoveryCheck
}

// backend is where an APIService's requests go.
type backend struct {
	// hostPort is the endpoint dialled.
	hostPort string
	// serverName is the name the backend's certificate must hold.
	serverName string
}

// resolve finds the backend of svc, a remote APIService: see resolveService.
func (a *Aggregator) resolve(svc *apiregistrationv1.APIService) (backend, error) {
	ref := svc.Spec.Service
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	return a.resolveService(ref.Namespace, ref.Name, port)
}

// ResolveEndpoint returns where the Service namespace/name takes requests on port, as
// resolveService finds it: an https URL of the endpoint's host and port. It is
// admission webhooks' service resolver (k8s.io/apiserver's webhook.ServiceResolver);
// the caller verifies the TLS server name <name>.<namespace>.svc.
func (a *Aggregator) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	b, err := a.resolveService(namespace, name, port)
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "https", Host: b.hostPort}, nil
}

// resolveService finds a backend of the Service namespace/name on port: a ready
// endpoint of its EndpointSlices on the slice port named as the Service's port, or
// the Service's externalName.
func (a *Aggregator) resolveService(namespace, name string, port int32) (backend, error) {
	b := backend{serverName: name + "." + namespace + ".svc"}
	service, err := a.services.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return b, &unresolved{ReasonServiceNotFound, fmt.Sprintf("service/%s in %q is not present", name, namespace)}
	}
	if err != nil {
		return b, err
	}
	sp, ok := servicePort(service, port)
	if !ok {
		return b, &unresolved{ReasonServicePortError, fmt.Sprintf("service/%s in %q is not listening on port %d", name, namespace, port)}
	}
	if service.Spec.Type == corev1.ServiceTypeExternalName {
		b.hostPort = net.JoinHostPort(service.Spec.ExternalName, strconv.Itoa(int(port)))
		return b, nil
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
	slices, err := a.slices.EndpointSlices(namespace).List(sel)
	if err != nil {
		return b, err
	}
	if len(slices) == 0 {
		return b, &unresolved{ReasonEndpointsNotFound, fmt.Sprintf("cannot find endpointslices for service/%s in %q", name, namespace)}
	}
	var candidates []string
	for _, s := range slices {
		target, ok := slicePort(s, sp)
		if !ok {
			continue
		}
		for _, e := range s.Endpoints {
			if readyEndpoint(e) {
				candidates = append(candidates, net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(target))))
			}
		}
	}
	if len(candidates) == 0 {
		return b, &unresolved{ReasonMissingEndpoints, fmt.Sprintf("endpointslices for service/%s in %q have no addresses with port name %q", name, namespace, sp.Name)}
	}
	b.hostPort = candidates[rand.IntN(len(candidates))]
	return b, nil
}

// slicePort returns the port number s gives the service port sp: the slice port of
// the same name (a Service of one port may leave both unnamed).
func slicePort(s *discoveryv1.EndpointSlice, sp corev1.ServicePort) (int32, bool) {
	for _, p := range s.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if name == sp.Name && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}
