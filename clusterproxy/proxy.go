package clusterproxy

import (
	"context"
	"crypto/tls"
	"maps"

	"net/http"
	"net/url"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	netutils "k8s.io/utils/net"
)

// Subresource is the name of the proxy subresources.
const Subresource = "proxy"

// methods are the HTTP methods a proxy forwards, kube's.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
	http.MethodHead, http.MethodOptions}

// Proxy forwards the proxy subresources' requests to the Pods, Services and Nodes a
// registry's store holds.
type Proxy struct {
	reg   *registry.Registry
	store *store.Store
	// family is the cluster's primary IP family, whose endpoints a Service proxy
	// prefers.
	family corev1.IPFamily
	// transport reaches Pods, Services and Nodes' other ports; kubelet a Node's
	// kubelet.
	transport, kubelet http.RoundTripper
}

// New returns the Proxy of the Pods, Services and Nodes reg serves from st, in a
// cluster whose primary IP family is family.
func New(reg *registry.Registry, st *store.Store, family corev1.IPFamily) *Proxy {
	return &Proxy{reg: reg, store: st, family: family, transport: newTransport(), kubelet: newKubeletTransport()}
}

// newTransport returns kube's proxy transport: Pods and Services are reached by IP,
// so their serving certificates cannot be verified for a name.
func newTransport() http.RoundTripper {
	return utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as kube's: targets are reached by IP
	})
}

// configure gives res its proxy subresource, whose options are kind.
func configure(res *registry.Resource, kind string, serve func(http.ResponseWriter, *http.Request, string, string) error) {
	if res.Hooks == nil {
		res.Hooks = &registry.Hooks{}
	}
	if res.Hooks.Connects == nil {
		res.Hooks.Connects = map[string]registry.Connect{}
	}
	res.Hooks.Connects[Subresource] = registry.Connect{Kind: schema.GroupVersionKind{Version: "v1", Kind: kind},
		Methods: methods, Subpath: true, Serve: serve}
}

// decodeOptions decodes r's query, with the path beyond the subresource as its
// "path", into into, one of kube's internal proxy option types, as kube's parameter
// codec does (a 400 for what it cannot decode).
func decodeOptions(r *http.Request, into runtime.Object) error {
	query := maps.Clone(r.URL.Query())
	if query == nil {
		query = url.Values{}
	}
	info, _ := request.InfoFrom(r.Context())
	if info != nil {
		query["path"] = []string{info.Subpath}
	}
	if err := legacyscheme.ParameterCodec.DecodeParameters(query, corev1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// forward proxies r to loc, with path joined to loc's, through transport, as kube's
// proxy handler does; what goes wrong on the way is answered as a Status.
func forward(w http.ResponseWriter, r *http.Request, loc *url.URL, path string, transport http.RoundTripper) {
	loc.Path = utilnet.JoinPreservingTrailingSlash(loc.Path, path)
	proxy.NewUpgradeAwareHandler(loc, transport, true, false, responder{}).ServeHTTP(w, r)
}

// responder answers the proxy's errors as the server answers any other.
type responder struct{}

func (responder) Error(w http.ResponseWriter, r *http.Request, err error) { respond.Error(w, r, err) }

// get reads the object name of the v1 resource gr in namespace into out.
func (p *Proxy) get(ctx context.Context, gr schema.GroupResource, namespace, name string, out any) error {
	res := p.reg.Served(gr, "v1")
	if res == nil {
		return apierrors.NewInternalError(ErrNotServed)
	}
	obj, err := p.store.Get(ctx, store.Ref{Resource: res, Version: "v1", Namespace: namespace, Name: name}, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out); err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}

// allowed refuses an address kube would not proxy to: one that is not global
// unicast (loopback, link-local, multicast, unspecified) or no IP at all.
func allowed(ip string) error {
	if a := netutils.ParseIPSloppy(ip); a == nil || !a.IsGlobalUnicast() {
		return apierrors.NewBadRequest("address not allowed")
	}
	return nil
}
