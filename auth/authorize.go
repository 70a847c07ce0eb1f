package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
)

// Attributes describe one request to authorize: who asks to do what to which object or
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

// Authorization modes (--authorization-mode). Members of GroupMasters may do anything
// whatever the modes, and anyone may read the health paths (healthPaths); the modes
// decide the rest, in order: the first to allow or deny a request decides it.
const (
	// ModeRBAC decides with the cluster's Roles, ClusterRoles and their bindings
	// (package rbac), as in Kubernetes. The default.
	ModeRBAC = "RBAC"
	// ModeAuthenticatedRead is Concord's first model: authenticated users may get,
	// list and watch every resource but Secrets, and create the self reviews
	// (kubectl auth can-i, whoami); anyone may get a non-resource path but the
	// profiles under /debug.
	ModeAuthenticatedRead = "AuthenticatedRead"
	// ModeAlwaysAllow allows everything. ModeAlwaysDeny allows nothing: as in
	// Kubernetes, it has no opinion, so a later mode may still allow.
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// Modes are the authorization modes, in the order --help lists them.
var Modes = []string{ModeRBAC, ModeAuthenticatedRead, ModeAlwaysAllow, ModeAlwaysDeny}

// ErrMode means an authorization mode list is empty, repeats a mode or names one
// that does not exist.
var ErrMode = errors.New("invalid authorization mode")

// healthPaths are answered to anyone whatever the modes, as kube-apiserver's default
// --authorization-always-allow-paths: load balancers and probes must read them.
var healthPaths = []string{"/healthz", "/healthz/*", "/readyz", "/readyz/*", "/livez", "/livez/*"}

// RuleAuthorizer decides requests and lists what a user may do (the RBAC
// authorizer).
type RuleAuthorizer interface {
	authorizer.Authorizer
	authorizer.RuleResolver
}

// Authorization is a server's authorizer: the modes of --authorization-mode behind
// the masters' and the health paths' allowances. Its RulesFor answers
// SelfSubjectRulesReviews with the modes' rules.
type Authorization struct {
	authorizer.Authorizer
	authorizer.RuleResolver
}

// NewAuthorization returns the authorizer of modes, in order. rbac is the RBAC
// authorizer, required when modes name ModeRBAC.
func NewAuthorization(modes []string, rbac RuleAuthorizer) (*Authorization, error) {
	if err := ValidateModes(modes); err != nil {
		return nil, err
	}
	paths, err := path.NewAuthorizer(healthPaths)
	if err != nil {
		return nil, err
	}
	chain := []union.NamedAuthorizer{
		{AuthorizerName: "Masters", Authorizer: authorizerfactory.NewPrivilegedGroups(GroupMasters)},
		{AuthorizerName: "HealthPaths", Authorizer: paths},
	}
	var resolvers []authorizer.RuleResolver
	for _, m := range modes {
		var a RuleAuthorizer
		switch m {
		case ModeRBAC:
			if rbac == nil {
				return nil, fmt.Errorf("%w: %s needs the RBAC authorizer", ErrMode, m)
			}
			a = rbac
		case ModeAuthenticatedRead:
			a = authenticatedRead{}
		case ModeAlwaysAllow:
			a = authorizerfactory.NewAlwaysAllowAuthorizer()
		case ModeAlwaysDeny:
			a = authorizerfactory.NewAlwaysDenyAuthorizer()
		}
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: m, Authorizer: a})
		resolvers = append(resolvers, a)
	}
	authz, err := union.New(chain...)
	if err != nil {
		return nil, err
	}
	return &Authorization{Authorizer: authz, RuleResolver: union.NewRuleResolvers(resolvers...)}, nil
}

// ValidateModes checks a --authorization-mode list: at least one mode, each of Modes,
// none twice.
func ValidateModes(modes []string) error {
	if len(modes) == 0 {
		return fmt.Errorf("%w: at least one of %s is required", ErrMode, strings.Join(Modes, ", "))
	}
	seen := map[string]bool{}
	for _, m := range modes {
		switch {
		case !slices.Contains(Modes, m):
			return fmt.Errorf("%w %q: allowed modes are %s", ErrMode, m, strings.Join(Modes, ", "))
		case seen[m]:
			return fmt.Errorf("%w: %q given twice", ErrMode, m)
		}
		seen[m] = true
	}
	return nil
}

// Decide asks authz about a: whether it is allowed, and if not, why (for Forbidden).
func Decide(ctx context.Context, authz authorizer.Authorizer, a Attributes) (allowed bool, reason string) {
	decision, reason, err := authz.Authorize(ctx, a.Record())
	if decision == authorizer.DecisionAllow {
		return true, ""
	}
	if err != nil {
		reason = strings.TrimSpace(reason + " " + err.Error())
	}
	return false, reason
}

// Record returns a in the form k8s.io/apiserver's authorizers take.
func (a Attributes) Record() *authorizer.AttributesRecord {
	return &authorizer.AttributesRecord{
		User: a.User.Info(), Verb: a.Verb, APIGroup: a.APIGroup, Resource: a.Resource,
		Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name,
		ResourceRequest: a.ResourceRequest, Path: a.Path,
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
