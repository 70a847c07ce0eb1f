package bootstrap

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// rolesByName returns the bootstrap ClusterRoles by name.
func rolesByName(t *testing.T) map[string]rbacv1.ClusterRole {
	t.Helper()
	out := map[string]rbacv1.ClusterRole{}
	for _, r := range ClusterRoles() {
		if _, dup := out[r.Name]; dup {
			t.Fatalf("ClusterRole %s is listed twice", r.Name)
		}
		out[r.Name] = r
	}
	return out
}

func TestPolicyNames(t *testing.T) {
	roles := rolesByName(t)
	want := []string{ClusterAdmin, Admin, Edit, View, AggregateToAdmin, AggregateToEdit, AggregateToView,
		BasicUser, Discovery, PublicInfoViewer, Monitoring, ControllerManager, AuthDelegator, IssuerDiscovery}
	if len(roles) != len(want) {
		t.Errorf("%d ClusterRoles, want %d", len(roles), len(want))
	}
	for _, name := range want {
		if _, ok := roles[name]; !ok {
			t.Errorf("no ClusterRole %s", name)
		}
	}
}

func TestPolicyMetadata(t *testing.T) {
	type object struct {
		kind, name          string
		labels, annotations map[string]string
	}
	var objects []object
	for _, r := range ClusterRoles() {
		objects = append(objects, object{"ClusterRole", r.Name, r.Labels, r.Annotations})
	}
	for _, b := range ClusterRoleBindings() {
		objects = append(objects, object{"ClusterRoleBinding", b.Name, b.Labels, b.Annotations})
	}
	for _, o := range objects {
		if got := o.labels[BootstrappingLabel]; got != BootstrappingValue {
			t.Errorf("%s %s: label %s=%q, want %q", o.kind, o.name, BootstrappingLabel, got, BootstrappingValue)
		}
		if got := o.annotations[rbacv1.AutoUpdateAnnotationKey]; got != "true" {
			t.Errorf("%s %s: annotation %s=%q, want \"true\"", o.kind, o.name, rbacv1.AutoUpdateAnnotationKey, got)
		}
	}
}

func TestBindingsReferToRoles(t *testing.T) {
	roles := rolesByName(t)
	seen := map[string]bool{}
	for _, b := range ClusterRoleBindings() {
		if seen[b.Name] {
			t.Errorf("ClusterRoleBinding %s is listed twice", b.Name)
		}
		seen[b.Name] = true
		ref := b.RoleRef
		if ref.APIGroup != rbacv1.GroupName || ref.Kind != "ClusterRole" {
			t.Errorf("ClusterRoleBinding %s refers to %s %s, want a ClusterRole", b.Name, ref.APIGroup, ref.Kind)
		}
		if _, ok := roles[ref.Name]; !ok {
			t.Errorf("ClusterRoleBinding %s refers to ClusterRole %s, which is not bootstrapped", b.Name, ref.Name)
		}
		if len(b.Subjects) == 0 {
			t.Errorf("ClusterRoleBinding %s binds nobody", b.Name)
		}
	}
}

func TestBindingSubjects(t *testing.T) {
	group := func(n string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: n}
	}
	want := map[string][]rbacv1.Subject{
		ClusterAdmin:      {group("system:masters")},
		BasicUser:         {group("system:authenticated")},
		Discovery:         {group("system:authenticated")},
		PublicInfoViewer:  {group("system:authenticated"), group("system:unauthenticated")},
		Monitoring:        {group("system:monitoring")},
		IssuerDiscovery:   {group("system:serviceaccounts")},
		ControllerManager: {{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:concord:controller-manager"}},
	}
	bindings := ClusterRoleBindings()
	if len(bindings) != len(want) {
		t.Errorf("%d ClusterRoleBindings, want %d", len(bindings), len(want))
	}
	for _, b := range bindings {
		if !equality.Semantic.DeepEqual(b.Subjects, want[b.Name]) {
			t.Errorf("ClusterRoleBinding %s binds %v, want %v", b.Name, b.Subjects, want[b.Name])
		}
		if b.RoleRef.Name != b.Name {
			t.Errorf("ClusterRoleBinding %s binds ClusterRole %s, want the one of its name", b.Name, b.RoleRef.Name)
		}
	}
}

// TestRulesSorted checks that every list of every rule is sorted and has no
// duplicates, as Kubernetes stores them.
func TestRulesSorted(t *testing.T) {
	for _, r := range ClusterRoles() {
		for i, rule := range r.Rules {
			for _, list := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources, rule.ResourceNames, rule.NonResourceURLs} {
				if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
					t.Errorf("ClusterRole %s rule %d: %v is not a sorted set", r.Name, i, list)
				}
			}
			if len(rule.Verbs) == 0 || (len(rule.Resources) == 0) == (len(rule.NonResourceURLs) == 0) {
				t.Errorf("ClusterRole %s rule %d is not a valid rule: %+v", r.Name, i, rule)
			}
		}
	}
}

func TestFreshCopies(t *testing.T) {
	roles := ClusterRoles()
	roles[0].Rules[0].Verbs[0] = "mutated"
	roles[0].Labels[BootstrappingLabel] = "mutated"
	bindings := ClusterRoleBindings()
	bindings[0].Subjects[0].Name = "mutated"
	if again := ClusterRoles(); again[0].Rules[0].Verbs[0] == "mutated" || again[0].Labels[BootstrappingLabel] == "mutated" {
		t.Error("ClusterRoles returned a shared copy")
	}
	if again := ClusterRoleBindings(); again[0].Subjects[0].Name == "mutated" {
		t.Error("ClusterRoleBindings returned a shared copy")
	}
}

// aggregatedPolicy returns the bootstrap roles as the aggregation controller leaves
// them: aggregated again until nothing changes.
func aggregatedPolicy(t *testing.T) map[string]*rbacv1.ClusterRole {
	t.Helper()
	roles := map[string]*rbacv1.ClusterRole{}
	for _, r := range ClusterRoles() {
		roles[r.Name] = &r
	}
	list := func(sel labels.Selector) ([]*rbacv1.ClusterRole, error) {
		var out []*rbacv1.ClusterRole
		for _, r := range roles {
			if sel.Matches(labels.Set(r.Labels)) {
				out = append(out, r)
			}
		}
		return out, nil
	}
	for range 10 {
		changed := false
		for _, r := range roles {
			if r.AggregationRule == nil {
				continue
			}
			rules, err := aggregate(r, list)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(rules, r.Rules) {
				r.Rules, changed = rules, true
			}
		}
		if !changed {
			return roles
		}
	}
	t.Fatal("aggregation did not settle")
	return nil
}

func TestAggregatedRolesNest(t *testing.T) {
	roles := aggregatedPolicy(t)
	for _, c := range []struct{ owner, servant string }{
		{Admin, Edit}, {Edit, View},
		{Admin, AggregateToAdmin}, {Edit, AggregateToEdit}, {View, AggregateToView},
	} {
		if ok, missing := validation.Covers(roles[c.owner].Rules, roles[c.servant].Rules); !ok {
			t.Errorf("%s does not cover %s: missing %v", c.owner, c.servant, missing)
		}
	}
	for _, c := range []struct{ owner, servant string }{{View, Edit}, {Edit, Admin}} {
		if ok, _ := validation.Covers(roles[c.owner].Rules, roles[c.servant].Rules); ok {
			t.Errorf("%s covers %s", c.owner, c.servant)
		}
	}
}

// TestCanI checks what users of Kubernetes expect of each role, as `kubectl auth
// can-i` would answer for a subject bound to it alone.
func TestCanI(t *testing.T) {
	roles := aggregatedPolicy(t)
	res := func(verb, group, resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}}
	}
	url := func(verb, path string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{path}}
	}
	cases := []struct {
		role string
		rule rbacv1.PolicyRule
		want bool
	}{
		{ClusterAdmin, res("deletecollection", "example.com", "widgets"), true},
		{ClusterAdmin, url("post", "/anything"), true},
		{View, res("get", "", "pods"), true},
		{View, res("list", "apps", "deployments"), true},
		{View, res("get", "", "pods/log"), true},
		{View, res("get", "", "secrets"), false},
		{View, res("create", "", "pods"), false},
		{View, res("get", "rbac.authorization.k8s.io", "roles"), false},
		{Edit, res("create", "apps", "deployments"), true},
		{Edit, res("get", "", "secrets"), true},
		{Edit, res("create", "", "pods/exec"), true},
		{Edit, res("impersonate", "", "serviceaccounts"), true},
		{Edit, res("get", "", "pods"), true},
		{Edit, res("create", "rbac.authorization.k8s.io", "rolebindings"), false},
		{Edit, res("update", "", "resourcequotas"), false},
		{Admin, res("create", "rbac.authorization.k8s.io", "rolebindings"), true},
		{Admin, res("create", "authorization.k8s.io", "localsubjectaccessreviews"), true},
		{Admin, res("delete", "apps", "statefulsets"), true},
		{Admin, res("update", "", "resourcequotas"), false},
		{Admin, res("create", "", "namespaces"), false},
		{BasicUser, res("create", "authorization.k8s.io", "selfsubjectaccessreviews"), true},
		{BasicUser, res("create", "authorization.k8s.io", "selfsubjectrulesreviews"), true},
		{BasicUser, res("create", "authentication.k8s.io", "selfsubjectreviews"), true},
		{BasicUser, res("get", "", "pods"), false},
		{Discovery, url("get", "/apis/apps/v1"), true},
		{Discovery, url("get", "/openapi/v3"), true},
		{Discovery, url("get", "/version"), true},
		{Discovery, url("get", "/metrics"), false},
		{PublicInfoViewer, url("get", "/readyz"), true},
		{PublicInfoViewer, url("get", "/apis"), false},
		{Monitoring, url("get", "/metrics"), true},
		{Monitoring, url("get", "/readyz/etcd"), true},
		{ControllerManager, res("update", "", "configmaps"), true},
		{ControllerManager, res("rewrite", "example.com", "widgets"), true},
		{ControllerManager, res("update", "apiextensions.k8s.io", "customresourcedefinitions/status"), true},
		{ControllerManager, res("create", "storagemigration.k8s.io", "storageversionmigrations"), true},
		{ControllerManager, res("delete", "migration.k8s.io", "storagestates"), true},
		{ControllerManager, res("watch", "internal.apiserver.k8s.io", "storageversions"), true},
		{ControllerManager, res("create", "coordination.k8s.io", "leases"), true},
		{ControllerManager, res("patch", "events.k8s.io", "events"), true},
		{ControllerManager, res("delete", "", "configmaps"), false},
		{ControllerManager, res("create", "", "secrets"), false},
		{ControllerManager, res("delete", "coordination.k8s.io", "leases"), false},
		{ControllerManager, res("escalate", "rbac.authorization.k8s.io", "clusterroles"), false},
	}
	for _, c := range cases {
		got, _ := validation.Covers(roles[c.role].Rules, []rbacv1.PolicyRule{c.rule})
		if got != c.want {
			t.Errorf("%s allows %v %v %v %v: %v, want %v", c.role, c.rule.Verbs, c.rule.APIGroups, c.rule.Resources, c.rule.NonResourceURLs, got, c.want)
		}
	}
}
