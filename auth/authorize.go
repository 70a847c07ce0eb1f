package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Attributes describe one request for Authorize: who asks to do what to which object or
// path. The server's request-info step fills them in.
type Attributes struct {
	// User is the caller, as authentication put it into the context.
	User User
	// Verb is the Kubernetes verb of a resource request (get, list, watch, create, update,
	// patch, delete, deletecollection, ...) or the lower-case HTTP method of a non-resource
	// request (get, head, post, ...).
	Verb string
	// APIGroup, Resource, Subresource, Namespace and Name locate the object of a resource
	// request; Namespace is empty for cluster-scoped resources.
	APIGroup, Resource, Subresource, Namespace, Name string
	// ResourceRequest is true for API object requests and false for other paths
	// (/healthz, /version, /openapi/v3, ...).
	ResourceRequest bool
	// Path is the request path.
	Path string
}

// readVerbs are the verbs every authenticated user may use on resources.
var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// debugPath is where the server's profiles are served (--profiling).
const debugPath = "/debug"

// Authorize decides a request. Members of GroupMasters may do anything. Others may read:
// users in GroupAuthenticated may get, list and watch any resource, and anyone may get or
// head a non-resource path but those under /debug, the profiles (authentication lets
// anonymous users reach only public paths). Everything else is denied, and reason says
// why, for Forbidden and the log.
func Authorize(a Attributes) (allowed bool, reason string) {
	u := a.User
	switch {
	case u.IsMaster():
		return true, ""
	case !a.ResourceRequest && (a.Path == debugPath || strings.HasPrefix(a.Path, debugPath+"/")):
		return false, fmt.Sprintf("only members of group %q may read the server's profiles", GroupMasters)
	case !a.ResourceRequest:
		if a.Verb == "get" || a.Verb == "head" {
			return true, ""
		}
		return false, fmt.Sprintf("only members of group %q may %s non-resource paths", GroupMasters, a.Verb)
	case !u.inGroup(GroupAuthenticated):
		return false, "anonymous requests may not access API resources"
	case readVerbs[a.Verb]:
		return true, ""
	default:
		return false, fmt.Sprintf("authenticated users may only get, list and watch; %s is reserved to members of group %q", a.Verb, GroupMasters)
	}
}

// Forbidden returns the 403 error for a request Authorize denied with reason, as a
// *apierrors.StatusError whose message reads like the Kubernetes one, e.g.
//
//	pods "web" is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "default": <reason>
//
// Cluster-scoped resources say "at the cluster scope", subresources appear as
// "pods/status", and non-resource requests read `forbidden: User "alice" cannot post
// path "/foo": <reason>`. An empty reason adds no suffix.
func Forbidden(a Attributes, reason string) error {
	var msg string
	if !a.ResourceRequest {
		msg = fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	} else {
		resource := a.Resource
		if a.Subresource != "" {
			resource += "/" + a.Subresource
		}
		scope := "at the cluster scope"
		if a.Namespace != "" {
			scope = fmt.Sprintf("in the namespace %q", a.Namespace)
		}
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q %s", a.User.Name, a.Verb, resource, a.APIGroup, scope)
	}
	if reason != "" {
		msg += ": " + reason
	}
	var gr schema.GroupResource
	if a.ResourceRequest {
		gr = schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	}
	return apierrors.NewForbidden(gr, a.Name, errors.New(msg))
}

// Authorizer decides with Authorize for code written against k8s.io/apiserver's
// authorizer interfaces (admission policies' authorizer checks). It allows or denies;
// it never says "no opinion".
var Authorizer authorizer.Authorizer = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	u := User{}
	if info := a.GetUser(); info != nil {
		u = User{Name: info.GetName(), UID: info.GetUID(), Groups: info.GetGroups(), Extra: info.GetExtra()}
	}
	allowed, reason := Authorize(Attributes{
		User: u, Verb: a.GetVerb(), APIGroup: a.GetAPIGroup(), Resource: a.GetResource(),
		Subresource: a.GetSubresource(), Namespace: a.GetNamespace(), Name: a.GetName(),
		ResourceRequest: a.IsResourceRequest(), Path: a.GetPath(),
	})
	if allowed {
		return authorizer.DecisionAllow, reason, nil
	}
	return authorizer.DecisionDeny, reason, nil
})
