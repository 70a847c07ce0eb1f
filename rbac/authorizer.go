package rbac

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/klog/v2"
)

// ErrUnsupportedRoleRef means a binding's roleRef names a kind other than Role and
// ClusterRole.
var ErrUnsupportedRoleRef = errors.New("unsupported role reference kind")

// Listers read the RBAC objects the Authorizer decides with, typically from informers'
// caches. All four are required.
type Listers struct {
	Roles               rbaclisters.RoleLister
	RoleBindings        rbaclisters.RoleBindingLister
	ClusterRoles        rbaclisters.ClusterRoleLister
	ClusterRoleBindings rbaclisters.ClusterRoleBindingLister
}

// Authorizer is Kubernetes' RBAC authorizer over Listers. It is safe for concurrent use
// (as long as the listers are, as informers' are).
type Authorizer struct {
	listers Listers
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// NewAuthorizer returns the RBAC authorizer reading l.
func NewAuthorizer(l Listers) *Authorizer {
	return &Authorizer{listers: l}
}

// visitFunc sees each rule that applies to a user (with the binding that grants it)
// or each error met resolving the bindings (rule nil). It returns false to stop.
type visitFunc func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// Authorize allows the request if a rule bound to its user allows it: a rule of a
// ClusterRoleBinding anywhere, or of a RoleBinding of the request's namespace. The
// reason of an Allow names the binding ("RBAC: allowed by ClusterRoleBinding ...").
// Otherwise it has no opinion; the reason then lists the bindings that could not be
// resolved (a missing role), if any. It never returns an error.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	var (
		reason string
		errs   []error
	)
	a.visit(u, attrs.GetNamespace(), func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			reason = "RBAC: allowed by " + source.String()
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if reason != "" {
		return authorizer.DecisionAllow, reason, nil
	}
	if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
		logger.Info("RBAC: no rules authorize the request", "user", u.GetName(), "groups", u.GetGroups(),
			"verb", attrs.GetVerb(), "apiGroup", attrs.GetAPIGroup(), "resource", attrs.GetResource(),
			"subresource", attrs.GetSubresource(), "name", attrs.GetName(), "path", attrs.GetPath(),
			"namespace", attrs.GetNamespace())
	}
	if len(errs) > 0 {
		reason = "RBAC: " + utilerrors.NewAggregate(errs).Error()
	}
	return authorizer.DecisionNoOpinion, reason, nil
}

// ConditionsAwareAuthorize returns Authorize's decision: RBAC has no conditions.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions denies: RBAC decisions have no conditions to evaluate.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor returns the rules that apply to u in namespace (cluster-wide ones only when
// namespace is ""), as a SelfSubjectRulesReview reports them: a rule with resources is
// a resource rule, one with non-resource URLs a non-resource rule. If some binding of
// u could not be resolved, the rules are those of the others, incomplete is true and
// err says why.
func (a *Authorizer) RulesFor(_ context.Context, u user.Info, namespace string) (resourceRules []authorizer.ResourceRuleInfo, nonResourceRules []authorizer.NonResourceRuleInfo, incomplete bool, err error) {
	rules, err := a.Rules(u, namespace)
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	return resourceRules, nonResourceRules, err != nil, err
}

// Rules returns every rule that applies to u in namespace: those of the
// ClusterRoleBindings of u and, if namespace is not "", of its RoleBindings there.
// A non-nil error (an aggregate) lists the bindings that could not be resolved; the
// rules are then those of the others. The rules are shared with the listers' cache:
// callers must not modify them.
func (a *Authorizer) Rules(u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	a.visit(u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// visit calls fn with each rule that applies to u in namespace, ClusterRoleBindings
// first, until fn returns false.
func (a *Authorizer) visit(u user.Info, namespace string, fn visitFunc) {
	crbs, err := a.listers.ClusterRoleBindings.List(labels.Everything())
	if err != nil && !fn(nil, nil, err) {
		return
	}
	for _, b := range crbs {
		s, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		src := &source{binding: "ClusterRoleBinding", name: b.Name, roleRef: b.RoleRef, subject: s}
		if !a.visitBinding(src, b.RoleRef, "", fn) {
			return
		}
	}
	if namespace == "" {
		return
	}
	rbs, err := a.listers.RoleBindings.RoleBindings(namespace).List(labels.Everything())
	if err != nil && !fn(nil, nil, err) {
		return
	}
	for _, b := range rbs {
		s, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		src := &source{binding: "RoleBinding", name: b.Name, namespace: namespace, roleRef: b.RoleRef, subject: s}
		if !a.visitBinding(src, b.RoleRef, namespace, fn) {
			return
		}
	}
}

// visitBinding calls fn with the rules of ref, or with the error resolving it. It
// returns false if fn did.
func (a *Authorizer) visitBinding(src *source, ref rbacv1.RoleRef, bindingNamespace string, fn visitFunc) bool {
	rules, err := a.roleRefRules(ref, bindingNamespace)
	if err != nil {
		return fn(nil, nil, err)
	}
	for i := range rules {
		if !fn(src, &rules[i], nil) {
			return false
		}
	}
	return true
}

// roleRefRules returns the rules of the role ref names: a Role of bindingNamespace or
// a ClusterRole. A missing role is the lister's NotFound error.
func (a *Authorizer) roleRefRules(ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		r, err := a.listers.Roles.Roles(bindingNamespace).Get(ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	case "ClusterRole":
		r, err := a.listers.ClusterRoles.Get(ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedRoleRef, ref.Kind)
	}
}

// source describes the binding that grants a rule, as Kubernetes names it in an
// Allow's reason: `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`, or
// `RoleBinding "b/ns" of Role "r" to ServiceAccount "sa/ns"`.
type source struct {
	binding, name, namespace string
	roleRef                  rbacv1.RoleRef
	subject                  *rbacv1.Subject
}

func (s *source) String() string {
	name := s.name
	if s.namespace != "" {
		name += "/" + s.namespace
	}
	return fmt.Sprintf("%s %q of %s %q to %s", s.binding, name, s.roleRef.Kind, s.roleRef.Name, describeSubject(s.subject, s.namespace))
}

// describeSubject names a subject; a service account as "name/namespace", its
// namespace defaulting to the binding's.
func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind != rbacv1.ServiceAccountKind {
		return fmt.Sprintf("%s %q", s.Kind, s.Name)
	}
	ns := s.Namespace
	if ns == "" {
		ns = bindingNamespace
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
}
