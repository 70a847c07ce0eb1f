package filters

import (
	"net/http"

	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Authorization asks authz about every request, with the user authentication found
// and the request info, and answers 403 unless it allows.
func Authorization(authz authorizer.Authorizer) Filter {
	return Filter{Name: "authorization", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info, _ := request.InfoFrom(r.Context())
			if info == nil {
				info = request.Parse(r)
			}
			user, _ := auth.UserFrom(r.Context())
			attrs := auth.Attributes{
				User: user, Verb: info.Verb, APIGroup: info.APIGroup, Resource: info.Resource,
				Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name,
				ResourceRequest: info.IsResourceRequest, Path: r.URL.Path,
			}
			ok, reason := auth.Decide(r.Context(), authz, attrs)
			audit.LogAuthorizationDecision(r.Context(), ok, reason)
			if !ok {
				respond.Error(w, r, auth.Forbidden(attrs, reason))
				return
			}
			next.ServeHTTP(w, r)
		})
	}}
}
