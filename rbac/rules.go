package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// RuleAllows reports whether rule grants the request attrs describes, as Kubernetes'
// RBAC decides: the verb, and for a resource request the API group, the resource
// (with its subresource) and the name, or for a non-resource request the path.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, attrs.GetVerb()) {
		return false
	}
	if !attrs.IsResourceRequest() {
		return nonResourceURLMatches(rule, attrs.GetPath())
	}
	resource, sub := attrs.GetResource(), attrs.GetSubresource()
	if sub != "" {
		resource += "/" + sub
	}
	return apiGroupMatches(rule, attrs.GetAPIGroup()) &&
		resourceMatches(rule, resource, sub) &&
		resourceNameMatches(rule, attrs.GetName())
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	return slices.ContainsFunc(rule.Verbs, func(v string) bool { return v == rbacv1.VerbAll || v == verb })
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	return slices.ContainsFunc(rule.APIGroups, func(g string) bool { return g == rbacv1.APIGroupAll || g == group })
}

// resourceMatches reports whether rule names resource ("pods" or, for a subresource,
// "pods/log"): "*" names every resource and subresource, "*/log" the log subresource
// of every resource. Nothing else is a wildcard: "pods/*" names only itself.
func resourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == resource {
			return true
		}
		if subresource != "" && r == "*/"+subresource {
			return true
		}
	}
	return false
}

// resourceNameMatches reports whether rule applies to the object named name: a rule
// without resourceNames applies to every object (and to requests naming none).
func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, name)
}

// nonResourceURLMatches reports whether rule names path: exactly, by "*", or by a
// prefix ending in "*" ("/apis/*" names "/apis" and everything under it).
func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}

// serviceAccountPrefix starts the user names of service accounts:
// system:serviceaccount:<namespace>:<name>.
const serviceAccountPrefix = "system:serviceaccount:"

// appliesTo returns the first of subjects that u is, if any. bindingNamespace is the
// namespace of a RoleBinding ("" for a ClusterRoleBinding): a service account
// subject without a namespace is in it.
func appliesTo(u user.Info, subjects []rbacv1.Subject, bindingNamespace string) (*rbacv1.Subject, bool) {
	for i := range subjects {
		if subjectIs(u, &subjects[i], bindingNamespace) {
			return &subjects[i], true
		}
	}
	return nil, false
}

func subjectIs(u user.Info, s *rbacv1.Subject, bindingNamespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.GetName() == s.Name
	case rbacv1.GroupKind:
		return slices.Contains(u.GetGroups(), s.Name)
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return false
		}
		rest, ok := strings.CutPrefix(u.GetName(), serviceAccountPrefix)
		if !ok {
			return false
		}
		userNS, name, ok := strings.Cut(rest, ":")
		return ok && userNS == ns && name == s.Name
	default:
		return false
	}
}
