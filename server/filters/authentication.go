package filters

import (
	"net/http"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// Authentication authenticates each request with a and puts the user into the request
// context (auth.UserFrom).
//
// A request with a valid bearer token runs as the token's user, and its Authorization
// header is removed so that nothing downstream can log or forward the token. Any other
// request whose path public(path) accepts runs as auth.AnonymousUser in
// auth.GroupUnauthenticated; the rest get 401 (reason Unauthorized). A nil public
// accepts no path.
//
// failed, if not nil, wraps the 401 answer (the audit of failed authentications).
func Authentication(a auth.RequestAuthenticator, public func(path string) bool, failed func(http.Handler) http.Handler) Filter {
	var unauthorized http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond.Error(w, r, apierrors.NewUnauthorized("Unauthorized"))
	})
	if failed != nil {
		unauthorized = failed(unauthorized)
	}
	return Filter{Name: "authentication", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, ok := a.AuthenticateRequest(r)
			switch {
			case ok:
				r.Header.Del("Authorization")
			case public != nil && public(r.URL.Path):
				u = auth.Anonymous()
			default:
				klog.FromContext(r.Context()).V(4).Info("Unauthorized request",
					"method", r.Method, "path", r.URL.Path, "remoteAddr", r.RemoteAddr,
					"hadAuthorizationHeader", r.Header.Get("Authorization") != "")
				unauthorized.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), u)))
		})
	}}
}
