package clusterproxy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/concordproject/concord/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/kubernetes/pkg/apis/core"
)

// The resources it reads.
var (
	Pods           = schema.GroupResource{Resource: "pods"}
	Services       = schema.GroupResource{Resource: "services"}
	Nodes          = schema.GroupResource{Resource: "nodes"}
	EndpointSlices = schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}
)

// ErrNotServed means the registry serves none of the v1 resources a proxy reads.
var ErrNotServed = errors.New("the resource a proxy reads is not served in v1")

// ErrNoTargetPod means a Service's endpoint is not a Pod's address, which a Service
// proxy never forwards to.
var ErrNoTargetPod = errors.New("the endpoint names no Pod of the Service's namespace with its address")

// ConfigurePods gives Pods their proxy subresource.
func (p *Proxy) ConfigurePods(res *registry.Resource) error {
	configure(res, "PodProxyOptions", p.servePod)
	return nil
}

// servePod forwards a request to pods/<[scheme:]name[:port]>/proxy to the Pod's IP,
// on the port named or its first container port (none: the scheme's).
func (p *Proxy) servePod(w http.ResponseWriter, r *http.Request, namespace, id string) error {
	opts := &core.PodProxyOptions{}
	if err := decodeOptions(r, opts); err != nil {
		return err
	}
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	pod := &corev1.Pod{}
	if err := p.get(r.Context(), Pods, namespace, name, pod); err != nil {
		return err
	}
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	var ip string
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	if err := allowed(ip); err != nil {
		return err
	}
	loc := &url.URL{Scheme: scheme, Host: ip}
	if strings.Contains(ip, ":") { // IPv6, bracketed in a URL
		loc.Host = "[" + ip + "]"
	}
	if port != "" {
		loc.Host = net.JoinHostPort(ip, port)
	}
	forward(w, r, loc, opts.Path, p.transport)
	return nil
}
