package filters

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// Recovery turns a panic further down the chain into a 500 Status and a logged stack,
// so that one bad request never takes the server down. http.ErrAbortHandler, the
// panic that aborts a response on purpose, goes on up.
func Recovery() Filter {
	return Filter{Name: "recovery", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if p := recover(); p != nil {
					if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
						panic(p)
					}
					klog.FromContext(r.Context()).Error(fmt.Errorf("panic: %v", p), "Handler panicked", "path", r.URL.Path, "stack", string(debug.Stack()))
					respond.Error(w, r, apierrors.NewInternalError(errors.New("the server panicked while handling the request")))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}}
}
