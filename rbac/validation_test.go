package rbac

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkErrors fails unless errs are, in order, errors starting with want.
func checkErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors %v, want %d: %q", len(errs), errs, len(want), want)
	}
	for i, w := range want {
		if got := errs[i].Error(); !strings.HasPrefix(got, w) {
			t.Errorf("error %d: %q, want %q", i, got, w)
		}
	}
}

func withRules(r *rbacv1.Role, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	r = r.DeepCopy()
	r.Rules = rules
	return r
}

func TestValidateRoles(t *testing.T) {
	valid := role("ns", "system:reader", podReaderRule)
	noVerbs := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}
	urls := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}}
	for _, tc := range []struct {
		name string
		errs field.ErrorList
		want []string
	}{
		{"valid, with a colon", ValidateRole(valid), nil},
		{"slash in the name", ValidateRole(role("ns", "a/b", podReaderRule)), []string{`metadata.name: Invalid value: "a/b": may not contain '/'`}},
		{"dot-dot name", ValidateRole(role("ns", "..", podReaderRule)), []string{`metadata.name: Invalid value: "..": may not be '..'`}},
		{"percent in the name", ValidateRole(role("ns", "a%b", podReaderRule)), []string{`metadata.name: Invalid value: "a%b": may not contain '%'`}},
		{"no namespace", ValidateRole(role("", "r", podReaderRule)), []string{`metadata.namespace: Required value`}},
		{"no verbs, reported last", ValidateRole(role("ns", "r", noVerbs, rbacv1.PolicyRule{Verbs: []string{"get"}})), []string{
			`rules[1].apiGroups: Required value: resource rules must supply at least one api group`,
			`rules[1].resources: Required value: resource rules must supply at least one resource`,
			`rules[0].verbs: Required value`,
		}},
		{"non-resource URLs in a Role", ValidateRole(role("ns", "r", urls)), []string{`rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`}},
		{"update keeping a rule without verbs", ValidateRoleUpdate(role("ns", "r", noVerbs), role("ns", "r", noVerbs)), []string{
			`rules[0].verbs: Required value: verbs must contain at least one value`,
		}},
		{"update to a rule without verbs", ValidateRoleUpdate(role("ns", "r", noVerbs), valid), []string{
			`metadata.name: Invalid value: "r": field is immutable`,
			`rules[0].verbs: Required value`,
		}},
		{"update of a valid role", ValidateRoleUpdate(withRules(valid, secretRule), valid), nil},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc.errs, tc.want) })
	}
}

func TestValidateClusterRoles(t *testing.T) {
	aggregated := func(sel ...metav1.LabelSelector) *rbacv1.ClusterRole {
		r := clusterRole("agg")
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: sel}
		return r
	}
	badValue := metav1.LabelSelector{MatchLabels: map[string]string{"a": "not valid!"}}
	for _, tc := range []struct {
		name string
		errs field.ErrorList
		want []string
	}{
		{"valid", ValidateClusterRole(clusterRole("system:basic-user", podReaderRule, healthRule)), nil},
		{"namespace set", ValidateClusterRole(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}}), []string{
			`metadata.namespace: Forbidden: not allowed on this type`,
		}},
		{"mixed rule", ValidateClusterRole(clusterRole("r", rbacv1.PolicyRule{Verbs: []string{"get"}, Resources: []string{"pods"}, NonResourceURLs: []string{"/x"}})), []string{
			`rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`,
		}},
		{"URLs with resource names", ValidateClusterRole(clusterRole("r", rbacv1.PolicyRule{Verbs: []string{"get"}, ResourceNames: []string{"n"}, NonResourceURLs: []string{"/x"}})), []string{
			`rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`,
		}},
		{"aggregation without selectors", ValidateClusterRole(aggregated()), []string{
			`aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil`,
		}},
		{"aggregation with a valid selector", ValidateClusterRole(aggregated(metav1.LabelSelector{MatchLabels: map[string]string{"rbac.example.com/aggregate-to-view": "true"}})), nil},
		{"aggregation with a bad operator", ValidateClusterRole(aggregated(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}})), []string{
			`aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`,
			`aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.`,
		}},
		{"aggregation with a bad label value", ValidateClusterRole(aggregated(badValue)), []string{
			`aggregationRule.clusterRoleSelectors[0].matchLabels: Invalid value: "not valid!"`,
			`aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc.errs, tc.want) })
	}
}

func TestValidateClusterRoleUpdateSelectors(t *testing.T) {
	aggregated := func(sel ...metav1.LabelSelector) *rbacv1.ClusterRole {
		r := clusterRole("agg")
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: sel}
		return r
	}
	badExpr := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn, Values: []string{"not valid!"}}}}
	good := metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"}}
	for _, tc := range []struct {
		name string
		errs field.ErrorList
		want []string
	}{
		// Kubernetes lets such a value through the selector's validation, but not
		// through parsing.
		{"keeping a bad label value", ValidateClusterRoleUpdate(aggregated(badExpr), aggregated(badExpr)), []string{
			`aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.`,
		}},
		{"to a bad label value", ValidateClusterRoleUpdate(aggregated(badExpr), aggregated(good)), []string{
			`aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]: Invalid value: "not valid!"`,
			`aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc.errs, tc.want) })
	}
}

func TestValidateBindings(t *testing.T) {
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}
	rb := func(kind, name string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
		return binding("ns", "b", kind, name, subjects...)
	}
	crb := func(kind, name string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		b := clusterBinding("b", name, subjects...)
		b.RoleRef.Kind = kind
		return b
	}
	withGroup := func(b *rbacv1.RoleBinding, group string) *rbacv1.RoleBinding {
		b.RoleRef.APIGroup = group
		return b
	}
	for _, tc := range []struct {
		name string
		errs field.ErrorList
		want []string
	}{
		{"valid", ValidateRoleBinding(rb("ClusterRole", "system:basic-user", userSubject("u"), groupSubject("g"), sa)), nil},
		{"valid cluster binding", ValidateClusterRoleBinding(crb("ClusterRole", "view", rbacv1.Subject{Kind: "ServiceAccount", Name: "robot", Namespace: "ns"})), nil},
		{"name with a slash", ValidateRoleBinding(binding("ns", "a/b", "Role", "r")), []string{`metadata.name: Invalid value: "a/b": may not contain '/'`}},
		{"roleRef group", ValidateRoleBinding(withGroup(rb("Role", "r"), "rbac")), []string{
			`roleRef.apiGroup: Unsupported value: "rbac": supported values: "rbac.authorization.k8s.io"`,
		}},
		{"roleRef kind", ValidateRoleBinding(rb("Group", "r")), []string{
			`roleRef.kind: Unsupported value: "Group": supported values: "Role", "ClusterRole"`,
		}},
		{"cluster binding of a Role", ValidateClusterRoleBinding(crb("Role", "r")), []string{
			`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`,
		}},
		{"roleRef without a name, reported last", ValidateRoleBinding(rb("Role", "", rbacv1.Subject{Kind: "Robot", Name: "x"})), []string{
			`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`,
			`roleRef.name: Required value`,
		}},
		{"roleRef name with a slash", ValidateRoleBinding(rb("Role", "a/b")), []string{`roleRef.name: Invalid value: "a/b": may not contain '/'`}},
		{"service account name", ValidateRoleBinding(rb("Role", "r", rbacv1.Subject{Kind: "ServiceAccount", Name: "Robot"})), []string{
			`subjects[0].name: Invalid value: "Robot": a lowercase RFC 1123 subdomain must consist of`,
		}},
		{"service account group", ValidateRoleBinding(rb("Role", "r", rbacv1.Subject{Kind: "ServiceAccount", APIGroup: rbacv1.GroupName, Name: "robot"})), []string{
			`subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""`,
		}},
		{"service account without a namespace in a cluster binding", ValidateClusterRoleBinding(crb("ClusterRole", "r", sa)), []string{
			`subjects[0].namespace: Required value`,
		}},
		{"user without the group", ValidateRoleBinding(rb("Role", "r", rbacv1.Subject{Kind: "User", Name: "u"})), []string{
			`subjects[0].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`,
		}},
		{"group of another API group", ValidateClusterRoleBinding(crb("ClusterRole", "r", rbacv1.Subject{Kind: "Group", APIGroup: "example.com", Name: "g"})), []string{
			`subjects[0].apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`,
		}},
		{"subject without a name, reported last", ValidateRoleBinding(rb("Role", "r", userSubject(""), rbacv1.Subject{Kind: "User", Name: "u"})), []string{
			`subjects[1].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`,
			`subjects[0].name: Required value`,
		}},
		{"update changing subjects", ValidateRoleBindingUpdate(rb("Role", "r", userSubject("a"), groupSubject("g")), rb("Role", "r", userSubject("a"))), nil},
		{"update changing roleRef", ValidateRoleBindingUpdate(rb("ClusterRole", "edit"), rb("ClusterRole", "view")), []string{
			`roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: field is immutable`,
		}},
		{"update of a cluster binding changing roleRef", ValidateClusterRoleBindingUpdate(crb("ClusterRole", "edit"), crb("ClusterRole", "view")), []string{
			`roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: field is immutable`,
		}},
		{"update emptying roleRef's name, reported in place", ValidateRoleBindingUpdate(rb("Role", "", rbacv1.Subject{Kind: "Robot", Name: "x"}), rb("Role", "r", rbacv1.Subject{Kind: "Robot", Name: "x"})), []string{
			`roleRef.name: Required value`,
			`subjects[0].kind: Unsupported value: "Robot"`,
			`roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":""}: field is immutable`,
		}},
		{"update keeping a subject without a name", ValidateRoleBindingUpdate(rb("Role", "r", userSubject(""), rbacv1.Subject{Kind: "Robot", Name: "x"}), rb("Role", "r", userSubject(""), rbacv1.Subject{Kind: "Robot", Name: "x"})), []string{
			`subjects[0].name: Required value`,
			`subjects[1].kind: Unsupported value: "Robot"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc.errs, tc.want) })
	}
}
