package server

import (
	"errors"
	"net/http"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// serveConnect answers a connect subresource's request (a Pod's log or exec): once
// the caller is also allowed the subresource's own verb, if it has one (kube's exec,
// attach and portforward need create even through GET), the subresource answers.
func (s *Server) serveConnect(w http.ResponseWriter, r *http.Request, q *apiRequest, c registry.Connect) {
	if c.Verb != "" && c.Verb != q.info.Verb {
		user, _ := auth.UserFrom(r.Context())
		attrs := auth.Attributes{
			User: user, Verb: c.Verb, APIGroup: q.info.APIGroup, Resource: q.info.Resource,
			Subresource: q.info.Subresource, Namespace: q.info.Namespace, Name: q.info.Name,
			ResourceRequest: true, Path: r.URL.Path,
		}
		if ok, reason := auth.Decide(r.Context(), s.cfg.Authorizer, attrs); !ok {
			// kube words this check apart from its authorization filter's.
			respond.Error(w, r, apierrors.NewForbidden(q.gr(), q.info.Name, errors.New(reason)))
			return
		}
	}
	if err := c.Serve(w, r, q.info.Namespace, q.info.Name); err != nil {
		respond.Error(w, r, err)
	}
}
