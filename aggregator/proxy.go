package aggregator

import (
	"fmt"
	"net/http"
	"net/http/httputil"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/respond"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Proxy returns the handler of the requests for gv if an APIService registers it to
// a backend, else nil. The handler expects an authenticated, authorized request (the
// user in its context).
func (a *Aggregator) Proxy(gv schema.GroupVersion) http.Handler {
	if a.remote(gv) == nil {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.serveProxy(w, r, gv) })
}

// serveProxy forwards r to gv's backend, or answers 503 naming the APIService.
func (a *Aggregator) serveProxy(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	svc := a.remote(gv)
	if svc == nil {
		respond.Error(w, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	if ok, cond := available(svc); !ok {
		why := "its availability is not known yet"
		if cond != nil {
			why = fmt.Sprintf("%s: %s", cond.Reason, cond.Message)
		}
		unavailable(w, r, svc, why)
		return
	}
	b, err := a.resolve(svc)
	if err != nil {
		unavailable(w, r, svc, err.Error())
		return
	}
	rt, err := a.transport(svc, b.serverName)
	if err != nil {
		unavailable(w, r, svc, err.Error())
		return
	}
	u, _ := auth.UserFrom(r.Context())
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "https", b.hostPort
			pr.Out.Host = b.hostPort
			pr.Out.Header.Del("Authorization")
			for k := range pr.Out.Header {
				if isImpersonation(k) {
					pr.Out.Header.Del(k)
				}
			}
		},
		Transport:     transport.NewAuthProxyRoundTripper(u.Name, u.UID, u.Groups, u.Extra, rt),
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			klog.FromContext(r.Context()).V(2).Info("Aggregated API server unreachable", "apiservice", svc.Name, "backend", b.hostPort, "err", err)
			unavailable(w, r, svc, fmt.Sprintf("error trying to reach service: %v", err))
		},
	}
	p.ServeHTTP(w, r)
}

// isImpersonation reports whether header k is one of the Impersonate-* headers, which
// the handler chain has already applied to the user.
func isImpersonation(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case authenticationv1.ImpersonateUserHeader, authenticationv1.ImpersonateUIDHeader, authenticationv1.ImpersonateGroupHeader:
		return true
	}
	return len(k) > len(authenticationv1.ImpersonateUserExtraHeaderPrefix) &&
		http.CanonicalHeaderKey(k[:len(authenticationv1.ImpersonateUserExtraHeaderPrefix)]) == http.CanonicalHeaderKey(authenticationv1.ImpersonateUserExtraHeaderPrefix)
}

// unavailable answers 503 with a Status that names svc and says why.
func unavailable(w http.ResponseWriter, r *http.Request, svc *apiregistrationv1.APIService, why string) {
	err := apierrors.NewServiceUnavailable(fmt.Sprintf("the aggregated API server of apiservice %q is unavailable: %s", svc.Name, why))
	err.ErrStatus.Details = &metav1.StatusDetails{Name: svc.Name, Group: GroupResource.Group, Kind: GroupResource.Resource}
	respond.Error(w, r, err)
}
