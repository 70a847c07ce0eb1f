package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/component-helpers/auth/rbac/validation"
	"k8s.io/klog/v2"
)

var (
	// ErrAggregationRule is why a user without every permission may not set, change
	// or keep an aggregationRule: it could gather any permission.
	ErrAggregationRule = errors.New("must have cluster-admin privileges to use the aggregationRule")
	// ErrNoUser means a request to check has no user.
	ErrNoUser = errors.New("no user on the request")
)

// fullAuthority is every permission: what the aggregationRule of a ClusterRole needs.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
	{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
}

// escalationCheck is the admission of NewEscalationCheck.
type escalationCheck struct {
	*admission.Handler
	authz authorizer.UnconditionalAuthorizer
	rules *Authorizer
}

// NewEscalationCheck returns the validating admission that keeps users from granting
// permissions they do not hold, as Kubernetes' RBAC storage does, on creations and
// updates (dry runs too) of the four RBAC resources. authz is the server's whole
// authorizer, asked whether the user may "escalate" a role or "bind" one; rules
// resolves the user's own RBAC rules.
//
// Members of system:masters may do anything. A Role or ClusterRole passes if the user
// may escalate it or holds every permission it grants (in the role's namespace, or
// cluster-wide for a ClusterRole); a ClusterRole with an aggregationRule (before or
// after an update) needs every permission. A binding passes if the user may bind its
// role or holds every permission of the role (in the binding's namespace, or
// cluster-wide). An update that changes only ownerReferences, finalizers or
// managedFields passes. A refusal is a Forbidden StatusError; a binding to a role
// that does not exist is NotFound.
func NewEscalationCheck(authz authorizer.UnconditionalAuthorizer, rules *Authorizer) admission.ValidationInterface {
	return &escalationCheck{Handler: admission.NewHandler(admission.Create, admission.Update), authz: authz, rules: rules}
}

// Validate checks a.
func (c *escalationCheck) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	gr := a.GetResource().GroupResource()
	switch gr {
	case RolesGR, ClusterRolesGR:
		return c.checkRole(ctx, a, gr)
	case RoleBindingsGR, ClusterRoleBindingsGR:
		return c.checkBinding(ctx, a, gr)
	}
	return nil
}

// privileged reports whether u is in system:masters, which may do anything.
func privileged(u user.Info) bool {
	return u != nil && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup)
}

// checkRole checks the creation or update of a Role or ClusterRole.
func (c *escalationCheck) checkRole(ctx context.Context, a admission.Attributes, gr schema.GroupResource) error {
	u := a.GetUserInfo()
	if privileged(u) || c.mayEscalate(ctx, a, gr) {
		return nil
	}
	obj, rules, aggregates, err := decodeRole(a.GetObject(), gr)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if a.GetOperation() == admission.Update {
		old, _, oldAggregates, err := decodeRole(a.GetOldObject(), gr)
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if onlyGCFieldsChange(obj, old) {
			return nil
		}
		aggregates = aggregates || oldAggregates
	}
	if err := c.confirmHeld(ctx, u, a.GetNamespace(), rules); err != nil {
		return apierrors.NewForbidden(gr, a.GetName(), err)
	}
	if aggregates && c.confirmHeld(ctx, u, a.GetNamespace(), fullAuthority) != nil {
		return apierrors.NewForbidden(gr, a.GetName(), ErrAggregationRule)
	}
	return nil
}

// checkBinding checks the creation or update of a RoleBinding or ClusterRoleBinding.
func (c *escalationCheck) checkBinding(ctx context.Context, a admission.Attributes, gr schema.GroupResource) error {
	u := a.GetUserInfo()
	if privileged(u) {
		return nil
	}
	ns := ""
	if gr == RoleBindingsGR {
		if ns = a.GetNamespace(); ns == "" {
			return apierrors.NewBadRequest("namespace is required")
		}
	}
	obj, ref, err := decodeBinding(a.GetObject(), gr)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if a.GetOperation() == admission.Update {
		old, _, err := decodeBinding(a.GetOldObject(), gr)
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if onlyGCFieldsChange(obj, old) {
			return nil
		}
	}
	if c.mayBind(ctx, u, ref, ns) {
		return nil
	}
	rules, err := c.rules.roleRefRules(ref, ns)
	switch {
	case apierrors.IsNotFound(err) && ref.Kind == "Role":
		return apierrors.NewNotFound(RolesGR, ref.Name)
	case apierrors.IsNotFound(err):
		return apierrors.NewNotFound(ClusterRolesGR, ref.Name)
	case err != nil:
		return apierrors.NewForbidden(gr, a.GetName(), err)
	}
	if err := c.confirmHeld(ctx, u, ns, rules); err != nil {
		return apierrors.NewForbidden(gr, a.GetName(), err)
	}
	return nil
}

// mayEscalate asks authz whether the user of a may escalate the role a writes. As in
// Kubernetes, where the request names the object only in its URL, a creation is
// asked about without a name.
func (c *escalationCheck) mayEscalate(ctx context.Context, a admission.Attributes, gr schema.GroupResource) bool {
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		name = ""
	}
	return c.allowed(ctx, authorizer.AttributesRecord{
		User: a.GetUserInfo(), Verb: "escalate", Namespace: a.GetNamespace(),
		APIGroup: gr.Group, APIVersion: "*", Resource: gr.Resource, Name: name, ResourceRequest: true,
	})
}

// mayBind asks authz whether u may bind the role ref names in namespace ("" for a
// ClusterRoleBinding).
func (c *escalationCheck) mayBind(ctx context.Context, u user.Info, ref rbacv1.RoleRef, namespace string) bool {
	var resource string
	switch ref.Kind {
	case "Role":
		resource = RolesGR.Resource
	case "ClusterRole":
		resource = ClusterRolesGR.Resource
	default:
		return false
	}
	return c.allowed(ctx, authorizer.AttributesRecord{
		User: u, Verb: "bind", Namespace: namespace,
		APIGroup: ref.APIGroup, APIVersion: "*", Resource: resource, Name: ref.Name, ResourceRequest: true,
	})
}

// allowed reports whether authz allows attrs; an error counts as no.
func (c *escalationCheck) allowed(ctx context.Context, attrs authorizer.AttributesRecord) bool {
	if c.authz == nil || attrs.User == nil {
		return false
	}
	decision, _, err := c.authz.Authorize(ctx, attrs)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Authorizing an RBAC escalation check", "verb", attrs.Verb,
			"resource", attrs.Resource, "name", attrs.Name, "namespace", attrs.Namespace, "user", attrs.User.GetName())
	}
	return decision == authorizer.DecisionAllow
}

// confirmHeld returns an error, worded as Kubernetes words it, unless u's RBAC rules
// in namespace cover rules.
func (c *escalationCheck) confirmHeld(ctx context.Context, u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	if u == nil {
		return ErrNoUser
	}
	owned, resolveErr := c.rules.Rules(u, namespace)
	if resolveErr != nil {
		klog.FromContext(ctx).V(1).Info("Some RBAC rules of the user could not be resolved", "user", u.GetName(), "err", resolveErr)
	}
	covered, missing := validation.Covers(owned, rules)
	if covered {
		return nil
	}
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.GetName(), u.GetGroups(), strings.Join(describeRules(compactRules(missing)), "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{resolveErr})
	}
	return errors.New(msg)
}

// decodeRole returns the Role or ClusterRole obj holds, its rules and whether it has
// an aggregationRule with selectors.
func decodeRole(obj runtime.Object, gr schema.GroupResource) (runtime.Object, []rbacv1.PolicyRule, bool, error) {
	if gr == RolesGR {
		r, err := decodeObject[rbacv1.Role](obj)
		if err != nil {
			return nil, nil, false, err
		}
		return r, r.Rules, false, nil
	}
	r, err := decodeObject[rbacv1.ClusterRole](obj)
	if err != nil {
		return nil, nil, false, err
	}
	return r, r.Rules, r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0, nil
}

// decodeBinding returns the RoleBinding or ClusterRoleBinding obj holds and its
// roleRef.
func decodeBinding(obj runtime.Object, gr schema.GroupResource) (runtime.Object, rbacv1.RoleRef, error) {
	if gr == RoleBindingsGR {
		b, err := decodeObject[rbacv1.RoleBinding](obj)
		if err != nil {
			return nil, rbacv1.RoleRef{}, err
		}
		return b, b.RoleRef, nil
	}
	b, err := decodeObject[rbacv1.ClusterRoleBinding](obj)
	if err != nil {
		return nil, rbacv1.RoleRef{}, err
	}
	return b, b.RoleRef, nil
}

// decodeObject returns obj, unstructured or already a *T, as a *T; an error wraps
// ErrUndecodable.
func decodeObject[T any](obj runtime.Object) (*T, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return fromUnstructured[T](u.Object)
	}
	if t, ok := any(obj).(*T); ok {
		return t, nil
	}
	return nil, fmt.Errorf("%w: got %T", ErrUndecodable, obj)
}

// onlyGCFieldsChange reports whether obj differs from old only in what the garbage
// collector and field managers write (ownerReferences, finalizers, managedFields),
// which needs no escalation check.
func onlyGCFieldsChange(obj, old runtime.Object) bool {
	c := obj.DeepCopyObject()
	cm, err := meta.Accessor(c)
	if err != nil {
		return false
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	cm.SetOwnerReferences(om.GetOwnerReferences())
	cm.SetFinalizers(om.GetFinalizers())
	cm.SetSelfLink(om.GetSelfLink())
	cm.SetManagedFields(om.GetManagedFields())
	return apiequality.Semantic.DeepEqual(c, old)
}

// simpleRule identifies the rules compactRules merges: one API group, one resource
// and at most one resource name.
type simpleRule struct {
	group, resource string
	hasName         bool
	name            string
}

// compactRules merges the rules that differ only in their verbs and have a single API
// group, resource and (at most) resource name, as Kubernetes does before listing
// the permissions an escalation lacks. The other rules are kept as they are.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	merged := map[simpleRule]int{} // index in out
	for _, r := range rules {
		key, ok := asSimpleRule(&r)
		if !ok {
			out = append(out, r)
			continue
		}
		if i, seen := merged[key]; seen {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		merged[key] = len(out)
		out = append(out, *r.DeepCopy())
	}
	return out
}

func asSimpleRule(r *rbacv1.PolicyRule) (simpleRule, bool) {
	if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
		return simpleRule{}, false
	}
	key := simpleRule{group: r.APIGroups[0], resource: r.Resources[0]}
	if len(r.ResourceNames) == 1 {
		key.hasName, key.name = true, r.ResourceNames[0]
	}
	return key, true
}

// describeRules prints rules as Kubernetes lists missing permissions, sorted and
// without duplicates: {APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]},
// naming only the fields that are set.
func describeRules(rules []rbacv1.PolicyRule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		var parts []string
		for _, f := range []struct {
			name   string
			values []string
		}{
			{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"NonResourceURLs", r.NonResourceURLs},
			{"ResourceNames", r.ResourceNames}, {"Verbs", r.Verbs},
		} {
			if len(f.values) > 0 {
				parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.values))
			}
		}
		out = append(out, "{"+strings.Join(parts, ", ")+"}")
	}
	slices.Sort(out)
	return slices.Compact(out)
}
