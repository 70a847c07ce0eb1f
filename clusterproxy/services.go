package clusterproxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	apiproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/apis/core"
)

// ConfigureServices gives Services their proxy subresource.
func (p *Proxy) ConfigureServices(res *registry.Resource) error {
	configure(res, "ServiceProxyOptions", p.serveService)
	return nil
}

// serveService forwards a request to services/<[scheme:]name[:port]>/proxy to one
// ready endpoint of the Service, a Pod's, on the service port named or numbered.
func (p *Proxy) serveService(w http.ResponseWriter, r *http.Request, namespace, id string) error {
	opts := &core.ServiceProxyOptions{}
	if err := decodeOptions(r, opts); err != nil {
		return err
	}
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	port, err := p.servicePortName(r.Context(), namespace, name, port)
	if err != nil {
		return err
	}
	endpoints, err := p.endpointSlices(r.Context(), namespace, name)
	if err != nil {
		return err
	}
	if len(endpoints) == 0 {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	hostport, err := apiproxy.RandomEndpoint(name, endpoints, port, p.family, func(ep *discoveryv1.Endpoint) bool {
		if err := p.backedByPod(r.Context(), namespace, ep); err != nil {
			klog.V(4).InfoS("Not proxying to an endpoint", "service", klog.KRef(namespace, name), "err", err)
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	forward(w, r, &url.URL{Scheme: scheme, Host: hostport}, opts.Path, p.transport)
	return nil
}

// servicePortName returns the name of the Service's port port: port itself unless it
// is a number, which must be one of the Service's ports (else kube's 503).
func (p *Proxy) servicePortName(ctx context.Context, namespace, name, port string) (string, error) {
	num, err := strconv.ParseInt(port, 10, 64)
	if err != nil {
		return port, nil //nolint:nilerr // a port name, as it is
	}
	svc := &corev1.Service{}
	if err := p.get(ctx, Services, namespace, name, svc); err != nil {
		return "", err
	}
	for _, sp := range svc.Spec.Ports {
		if int64(sp.Port) == num {
			return sp.Name, nil
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", num, name))
}

// endpointSlices returns the EndpointSlices of the Service name in namespace.
func (p *Proxy) endpointSlices(ctx context.Context, namespace, name string) ([]*discoveryv1.EndpointSlice, error) {
	res := p.reg.Served(EndpointSlices, "v1")
	if res == nil {
		return nil, apierrors.NewInternalError(ErrNotServed)
	}
	selector := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name}).String()
	list, err := p.store.List(ctx, store.Ref{Resource: res, Version: "v1", Namespace: namespace},
		metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(list.Items))
	for _, item := range list.Items {
		slice := &discoveryv1.EndpointSlice{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, slice); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out = append(out, slice)
	}
	return out, nil
}

// backedByPod says why ep is not an address kube proxies to: only the IP of a Pod of
// the Service's namespace that the endpoint names is.
func (p *Proxy) backedByPod(ctx context.Context, namespace string, ep *discoveryv1.Endpoint) error {
	ref := ep.TargetRef
	switch {
	case ref == nil:
		return ErrNoTargetPod
	case ref.Namespace != namespace:
		return fmt.Errorf("%w: the endpoint's Pod is in namespace %q", ErrNoTargetPod, ref.Namespace)
	case len(ep.Addresses) == 0:
		return fmt.Errorf("%w: the endpoint has no address", ErrNoTargetPod)
	}
	pod := &corev1.Pod{}
	if err := p.get(ctx, Pods, namespace, ref.Name, pod); err != nil {
		return err
	}
	if !slices.ContainsFunc(pod.Status.PodIPs, func(ip corev1.PodIP) bool { return ip.IP == ep.Addresses[0] }) {
		return fmt.Errorf("%w: Pod %s has no IP %s", ErrNoTargetPod, ref.Name, ep.Addresses[0])
	}
	return nil
}
