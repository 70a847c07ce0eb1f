package auth

import (
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// unauthorizedBody is the JSON Status of every 401, built once.
var unauthorizedBody = func() []byte {
	status := apierrors.NewUnauthorized("Unauthorized").ErrStatus
	status.Kind, status.APIVersion = "Status", "v1"
	body, err := json.Marshal(status)
	if err != nil {
		panic(err) // a metav1.Status always encodes
	}
	return body
}()

// WithAuthentication authenticates each request with a before passing it to h, with the
// user in the request context (see UserFrom).
//
// A request with a valid bearer token runs as the token's user, and its Authorization
// header is removed so that nothing downstream can log or forward the token. Any other
// request whose path public(path) accepts runs as AnonymousUser in GroupUnauthenticated;
// the rest get 401 with a Status body (reason Unauthorized). A nil public accepts no path.
func WithAuthentication(h http.Handler, a *TokenAuthenticator, public func(path string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := a.AuthenticateRequest(r)
		switch {
		case ok:
			r.Header.Del("Authorization")
		case public != nil && public(r.URL.Path):
			u = anonymous
		default:
			klog.FromContext(r.Context()).V(4).Info("Unauthorized request",
				"method", r.Method, "path", r.URL.Path, "remoteAddr", r.RemoteAddr,
				"hadAuthorizationHeader", r.Header.Get("Authorization") != "")
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write(unauthorizedBody)
			return
		}
		h.ServeHTTP(w, r.WithContext(WithUser(r.Context(), u)))
	})
}
