package filters

import (
	"fmt"
	"net/http"

	"github.com/concordproject/concord/server/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// BodyLimit caps request bodies at limit bytes: a declared length over it is a 413
// at once, and reading past it fails the read.
func BodyLimit(limit int64) Filter {
	return Filter{Name: "body-limit", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > limit {
				respond.Error(w, r, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", limit)))
				return
			}
			if r.Body != nil {
				r.Body = http.MaxBytesReader(w, r.Body, limit)
			}
			next.ServeHTTP(w, r)
		})
	}}
}
