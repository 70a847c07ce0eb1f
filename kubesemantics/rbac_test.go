package kubesemantics

import (
	"testing"

	"github.com/concordproject/concord/request"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/rbac"
)

var podReader = rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}

func TestRoles(t *testing.T) {
	r := cpResource(t, "rbac.authorization.k8s.io", "roles")
	ctx := t.Context()
	role := func(name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Rules: rules}
	}
	created, errs := cpCreate(ctx, t, r, "v1", role("system:reader", podReader))
	cpWant(t, "a valid Role, its name with a colon", errs)
	if created.GetGeneration() != 0 {
		t.Errorf("generation %d, want none: kube's strategy sets none", created.GetGeneration())
	}
	_, errs = cpCreate(ctx, t, r, "v1", role("a/b", podReader))
	cpWant(t, "a slash in the name", errs, "metadata.name: Invalid value")
	_, errs = cpCreate(ctx, t, r, "v1", role("r", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}}))
	cpWant(t, "non-resource URLs in a Role", errs, "rules[0].nonResourceURLs: Invalid value")
	_, errs = cpCreate(ctx, t, r, "v1", role("r", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}))
	cpWant(t, "no verbs", errs, "rules[0].verbs: Required value")
	_, errs = cpCreate(ctx, t, r, "v1beta1", &rbacv1beta1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
		Rules: []rbacv1beta1.PolicyRule{{Verbs: []string{"get"}}}})
	cpWant(t, "v1beta1, a rule without groups or resources", errs, "rules[0].apiGroups: Required value", "rules[0].resources: Required value")
	_, errs = cpUpdate(ctx, t, r, "v1", "", role("system:reader"), created)
	cpWant(t, "an update without resourceVersion", errs, "metadata.resourceVersion: Invalid value")
}

func TestClusterRoles(t *testing.T) {
	r := cpResource(t, "rbac.authorization.k8s.io", "clusterroles")
	ctx := t.Context()
	aggregated := func(sel ...metav1.LabelSelector) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg", ResourceVersion: "1"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: sel}}
	}
	_, errs := cpCreate(ctx, t, r, "v1", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view"},
		Rules: []rbacv1.PolicyRule{podReader, {Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}})
	cpWant(t, "a valid ClusterRole", errs)
	_, errs = cpCreate(ctx, t, r, "v1", aggregated())
	cpWant(t, "aggregation without selectors", errs, "aggregationRule.clusterRoleSelectors: Required value")
	bad := metav1.LabelSelector{MatchLabels: map[string]string{"k": "not a value"}}
	_, errs = cpCreate(ctx, t, r, "v1", aggregated(bad))
	cpWant(t, "a bad label value", errs, "aggregationRule.clusterRoleSelectors[0].matchLabels: Invalid value",
		"aggregationRule.clusterRoleSelectors[0]: Invalid value")
}

// A stored ClusterRole that aggregates with a label value new ones may not have is
// not refused for it again by the selector's validation (kube still finds the
// selector unusable).
func TestClusterRoleKeepsLooseSelectors(t *testing.T) {
	r := cpResource(t, "rbac.authorization.k8s.io", "clusterroles")
	ctx := t.Context()
	bad := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn, Values: []string{"not a value"}}}}
	good := metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"}}
	role := func(labels map[string]string, sel metav1.LabelSelector) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg", ResourceVersion: "1", Labels: labels},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{sel}}}
	}
	stored := cpObject(t, r, "v1", role(nil, bad))
	_, errs := cpUpdate(ctx, t, r, "v1", "", role(map[string]string{"a": "b"}, bad), stored)
	cpWant(t, "an update keeping the stored loose selector", errs, "aggregationRule.clusterRoleSelectors[0]: Invalid value")
	stored = cpObject(t, r, "v1", role(nil, good))
	_, errs = cpUpdate(ctx, t, r, "v1", "", role(nil, bad), stored)
	cpWant(t, "an update bringing a loose selector", errs, "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]: Invalid value",
		"aggregationRule.clusterRoleSelectors[0]: Invalid value")
	if aggregatesLoosely(&rbac.ClusterRole{}) {
		t.Error("a ClusterRole without aggregation aggregates loosely")
	}
}

func TestRoleBindings(t *testing.T) {
	r := cpResource(t, "rbac.authorization.k8s.io", "rolebindings")
	ctx := t.Context()
	binding := func(kind, name string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
			RoleRef: rbacv1.RoleRef{Kind: kind, Name: name}, Subjects: subjects}
	}
	created, errs := cpCreate(ctx, t, r, "v1", binding("ClusterRole", "view", rbacv1.Subject{Kind: "User", Name: "u"},
		rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}))
	cpWant(t, "a valid RoleBinding", errs)
	var b rbacv1.RoleBinding
	cpInto(t, created, &b)
	if b.RoleRef.APIGroup != rbacv1.GroupName || b.Subjects[0].APIGroup != rbacv1.GroupName || b.Subjects[1].APIGroup != "" {
		t.Errorf("defaults: roleRef %+v, subjects %+v; want the rbac group on roleRef and the user", b.RoleRef, b.Subjects)
	}
	_, errs = cpCreate(ctx, t, r, "v1", binding("Group", "view"))
	cpWant(t, "a roleRef of kind Group", errs, "roleRef.kind: Unsupported value")
	_, errs = cpCreate(ctx, t, r, "v1", binding("Role", "r", rbacv1.Subject{Kind: "Robot", Name: "x"}))
	cpWant(t, "a subject of kind Robot", errs, "subjects[0].kind: Unsupported value")
	_, errs = cpCreate(ctx, t, r, "v1", binding("Role", ""))
	cpWant(t, "no role name", errs, "roleRef.name: Required value")
	changed := binding("ClusterRole", "edit", rbacv1.Subject{Kind: "User", Name: "u"})
	changed.ResourceVersion = "1"
	_, errs = cpUpdate(ctx, t, r, "v1", "", changed, created)
	cpWant(t, "a changed roleRef", errs, "roleRef: Invalid value")
}

func TestClusterRoleBindings(t *testing.T) {
	r := cpResource(t, "rbac.authorization.k8s.io", "clusterrolebindings")
	ctx := t.Context()
	binding := func(kind string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:b"},
			RoleRef: rbacv1.RoleRef{Kind: kind, Name: "view"}, Subjects: subjects}
	}
	_, errs := cpCreate(ctx, t, r, "v1", binding("ClusterRole", rbacv1.Subject{Kind: "ServiceAccount", Name: "robot", Namespace: "ns"}))
	cpWant(t, "a valid ClusterRoleBinding", errs)
	_, errs = cpCreate(ctx, t, r, "v1", binding("Role"))
	cpWant(t, "a Role bound cluster-wide", errs, "roleRef.kind: Unsupported value")
	_, errs = cpCreate(ctx, t, r, "v1", binding("ClusterRole", rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}))
	cpWant(t, "a service account without a namespace", errs, "subjects[0].namespace: Required value")
}

// A storage-migration rewrite's request names the resource but no version: the
// object is validated, declaratively too, in the version it is given.
func TestRewriteValidatesInItsVersion(t *testing.T) {
	r := cpResource(t, "rbac.authorization.k8s.io", "rolebindings")
	ctx := request.WithInfo(t.Context(), &request.Info{IsResourceRequest: true, Verb: "create",
		APIGroup: "rbac.authorization.k8s.io", Resource: "rolebindings"})
	b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", ResourceVersion: "1"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}}}
	stored, errs := cpCreate(t.Context(), t, r, "v1", b)
	cpWant(t, "a RoleBinding", errs)
	_, errs = cpUpdate(ctx, t, r, "v1", "", b, stored)
	cpWant(t, "a rewrite of a RoleBinding", errs)
}
