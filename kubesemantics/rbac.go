package kubesemantics

import (
	"context"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacvalidation "k8s.io/kubernetes/pkg/apis/rbac/validation"

	_ "k8s.io/kubernetes/pkg/apis/rbac/install" // rbac's types, defaults and conversions
)

func init() { groups = append(groups, rbacKinds) }

// rbacKinds are the strategies of group rbac.authorization.k8s.io. Roles and bindings
// have nothing to prepare, only kube's validation. The escalation and bind checks
// are admission (package rbac), not the strategy's.
func rbacKinds() map[schema.GroupResource]strategy {
	const group = "rbac.authorization.k8s.io"
	return map[schema.GroupResource]strategy{
		{Group: group, Resource: "roles"}: kind[*rbac.Role]{
			validate: func(_ context.Context, r *rbac.Role) field.ErrorList { return rbacvalidation.ValidateRole(r) },
			validateUpdate: func(_ context.Context, r, old *rbac.Role) field.ErrorList {
				return rbacvalidation.ValidateRoleUpdate(r, old)
			},
		}.erase(),
		{Group: group, Resource: "clusterroles"}: kind[*rbac.ClusterRole]{
			validate: func(_ context.Context, r *rbac.ClusterRole) field.ErrorList {
				return rbacvalidation.ValidateClusterRole(r, rbacvalidation.ClusterRoleValidationOptions{})
			},
			validateUpdate: func(_ context.Context, r, old *rbac.ClusterRole) field.ErrorList {
				opts := rbacvalidation.ClusterRoleValidationOptions{AllowInvalidLabelValueInSelector: aggregatesLoosely(old)}
				return rbacvalidation.ValidateClusterRoleUpdate(r, old, opts)
			},
		}.erase(),
		{Group: group, Resource: "rolebindings"}: kind[*rbac.RoleBinding]{
			validate: func(_ context.Context, b *rbac.RoleBinding) field.ErrorList {
				return rbacvalidation.ValidateRoleBinding(b)
			},
			validateUpdate: func(_ context.Context, b, old *rbac.RoleBinding) field.ErrorList {
				return rbacvalidation.ValidateRoleBindingUpdate(b, old)
			},
			declarative: bindingDeclarative[*rbac.RoleBinding],
		}.erase(),
		{Group: group, Resource: "clusterrolebindings"}: kind[*rbac.ClusterRoleBinding]{
			validate: func(_ context.Context, b *rbac.ClusterRoleBinding) field.ErrorList {
				return rbacvalidation.ValidateClusterRoleBinding(b)
			},
			validateUpdate: func(_ context.Context, b, old *rbac.ClusterRoleBinding) field.ErrorList {
				return rbacvalidation.ValidateClusterRoleBindingUpdate(b, old)
			},
			declarative: bindingDeclarative[*rbac.ClusterRoleBinding],
		}.erase(),
	}
}

// aggregatesLoosely reports whether a stored ClusterRole aggregates with a label
// selector a new one could not have (a label value now invalid): its updates may
// keep such selectors.
func aggregatesLoosely(role *rbac.ClusterRole) bool {
	if role.AggregationRule == nil {
		return false
	}
	strict := metav1validation.LabelSelectorValidationOptions{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		if len(metav1validation.ValidateLabelSelector(&role.AggregationRule.ClusterRoleSelectors[i], strict, nil)) > 0 {
			return true
		}
	}
	return false
}

// bindingDeclarative is the declarative validation of bindings: a short-circuiting
// declarative error on a field counts as matched by a hand-written one on a field
// under it (the mismatch checks that compare the two validations).
func bindingDeclarative[T any](context.Context, T, T) rest.DeclarativeValidationConfig {
	return rest.DeclarativeValidationConfig{ShortCircuitMismatch: true}
}
