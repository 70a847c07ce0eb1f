package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/concordproject/concord/auth"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

func schemaGR(resource string) schema.GroupResource { return schema.GroupResource{Resource: resource} }

// withRecovery turns a panic in a handler into a 500 Status and a logged stack, so one
// bad request never takes the server down.
func withRecovery(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(p)
				}
				klog.FromContext(r.Context()).Error(fmt.Errorf("panic: %v", p), "Handler panicked", "path", r.URL.Path, "stack", string(debug.Stack()))
				writeError(w, r, apierrors.NewInternalError(fmt.Errorf("the server panicked while handling the request")))
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// withTimeout bounds every request but watches with the request timeout (or a shorter
// ?timeout=); handlers see the deadline in their context and fail with 504.
func (s *Server) withTimeout(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isWatchQuery(r) || isWatchPath(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		timeout := s.cfg.RequestTimeout
		if t := r.URL.Query().Get("timeout"); t != "" {
			if d, err := parseDuration(t); err == nil && d > 0 && d < timeout {
				timeout = d
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// withBodyLimit caps request bodies; reading past the cap is a 413.
func withBodyLimit(h http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			writeError(w, r, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", limit)))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		h.ServeHTTP(w, r)
	})
}

func withRequestInfo(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(WithRequestInfo(r.Context(), ParseRequestInfo(r))))
	})
}

// withAuthorization asks the authorizer about every request and answers 403 when it
// says no.
func (s *Server) withAuthorization(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := RequestInfoFrom(r.Context())
		user, _ := auth.UserFrom(r.Context())
		attrs := auth.Attributes{
			User: user, Verb: info.Verb, APIGroup: info.APIGroup, Resource: info.Resource,
			Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name,
			ResourceRequest: info.IsResourceRequest, Path: r.URL.Path,
		}
		if ok, reason := auth.Authorize(attrs); !ok {
			writeError(w, r, auth.Forbidden(attrs, reason))
			return
		}
		h.ServeHTTP(w, r)
	})
}
