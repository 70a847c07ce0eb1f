package filters

import (
	"net/http"

	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
)

// Impersonation lets a request run as another user when it asks to with
// Impersonate-* headers (kubectl --as, client-go's rest.Config.Impersonate) and
// authz allows its authenticated user to impersonate each part (the user,
// every group, the UID, every extra value). A part denied is 403 and the request goes
// no further; groups, a UID or extras without a user are 400. Later filters and the
// handlers see the impersonated user only.
func Impersonation(authz authorizer.Authorizer) Filter {
	return Filter{Name: "impersonation", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requester, _ := auth.UserFrom(r.Context())
			imp, err := auth.ImpersonationOf(r.Header, requester)
			if err != nil {
				respond.Error(w, r, apierrors.NewBadRequest(err.Error()))
				return
			}
			if imp == nil {
				next.ServeHTTP(w, r)
				return
			}
			for _, a := range imp.Checks {
				if ok, reason := auth.Decide(r.Context(), authz, a); !ok {
					respond.Error(w, r, auth.Forbidden(a, reason))
					return
				}
			}
			klog.FromContext(r.Context()).V(4).Info("Impersonating", "requester", requester.Name, "user", imp.User.Name, "groups", imp.User.Groups)
			audit.LogImpersonatedUser(r.Context(), imp.User)
			r = r.WithContext(auth.WithUser(r.Context(), imp.User))
			auth.RemoveImpersonationHeaders(r.Header)
			next.ServeHTTP(w, r)
		})
	}}
}
