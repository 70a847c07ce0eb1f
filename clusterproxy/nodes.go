package clusterproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/concordproject/concord/podconnect"
	"github.com/concordproject/concord/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/kubernetes/pkg/apis/core"
)

// ConfigureNodes gives Nodes their proxy subresource.
func (p *Proxy) ConfigureNodes(res *registry.Resource) error {
	configure(res, "NodeProxyOptions", p.serveNode)
	return nil
}

// serveNode forwards a request to nodes/<[scheme:]name[:port]>/proxy to the Node's
// preferred address: to its kubelet when no other port is named.
func (p *Proxy) serveNode(w http.ResponseWriter, r *http.Request, _, id string) error {
	opts := &core.NodeProxyOptions{}
	if err := decodeOptions(r, opts); err != nil {
		return err
	}
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", id))
	}
	node := &corev1.Node{}
	if err := p.get(r.Context(), Nodes, "", name, node); err != nil {
		return err
	}
	host, kubeletPort, err := podconnect.KubeletAddress(node)
	if err != nil {
		return err
	}
	if err := proxyable(r.Context(), host); err != nil {
		return err
	}
	if port == "" || port == strconv.Itoa(kubeletPort) {
		loc := &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(kubeletPort))}
		forward(w, r, loc, opts.Path, p.kubelet)
		return nil
	}
	forward(w, r, &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}, opts.Path, p.transport)
	return nil
}

// proxyable refuses, as kube does (400), a host that resolves to no address or to
// one kube would not proxy to.
func proxyable(ctx context.Context, host string) error {
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if len(addrs) == 0 {
		return apierrors.NewBadRequest("no addresses for hostname")
	}
	for _, a := range addrs {
		if !a.IP.IsGlobalUnicast() {
			return apierrors.NewBadRequest("address not allowed")
		}
	}
	return nil
}

// newKubeletTransport returns the transport to kubelets, to which Concord, holding
// no kubelet client credentials, forwards nothing: its dial answers the dial's error
// when the kubelet cannot be reached, as kube's transport would, else
// podconnect.ErrNoKubeletProxy as a 503. Upgrades (WebSockets) dial it too.
func newKubeletTransport() http.RoundTripper {
	return utilnet.SetTransportDefaults(&http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			if err := podconnect.Dial(ctx, addr); err != nil {
				return nil, err
			}
			return nil, apierrors.NewServiceUnavailable(podconnect.ErrNoKubeletProxy.Error())
		},
	})
}
