package filters

import (
	"context"
	"net/http"
	"time"

	"github.com/concordproject/concord/server/request"
)

// Timeout bounds every request but watches by limit, or by a shorter ?timeout= the
// client asks for; handlers see the deadline in their context and answer 504 when it
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
				if d, err := time.ParseDuration(t); err == nil && d > 0 && d < timeout {
					timeout = d
				}
			}
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}}
}
