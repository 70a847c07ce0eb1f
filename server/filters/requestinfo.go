package filters

import (
	"net/http"

	"github.com/concordproject/concord/request"
)

// RequestInfo reads what the method and URL say about the request (request.Parse) and
// puts it into the request context, for every stage after it.
func RequestInfo() Filter {
	return Filter{Name: "request-info", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(request.WithInfo(r.Context(), request.Parse(r))))
		})
	}}
}
