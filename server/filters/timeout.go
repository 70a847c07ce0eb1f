package filters

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Timeout bounds every request but watches by limit, or by a shorter ?timeout= the
// client asks for (one that is not a duration is a 400 BadRequest, as in Kubernetes);
// handlers see the deadline in their context and answer 504 when it
// passes. Watches are long-running: the watch handler bounds them itself.
func Timeout(limit time.Duration) Filter {
	return Filter{Name: "timeout", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if info, ok := request.InfoFrom(r.Context()); ok && info.Verb == "watch" {
				next.ServeHTTP(w, r)
				return
			}
			timeout := limit
			if t := r.URL.Query().Get("timeout"); t != "" {
				d, err := time.ParseDuration(t)
				if err != nil {
					respond.Error(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL: %q is not a duration (e.g. 30s)", t)))
					return
				}
				if d > 0 && d < timeout {
					timeout = d
				}
			}
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}}
}
