package rbac

import (
	"errors"
	"net/http"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

var (
	carol  = &user.DefaultInfo{Name: "carol", Groups: []string{user.AllAuthenticated}}
	dave   = &user.DefaultInfo{Name: "dave", Groups: []string{user.AllAuthenticated}}
	erin   = &user.DefaultInfo{Name: "erin", Groups: []string{user.AllAuthenticated}}
	root   = &user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}
	admin  = &user.DefaultInfo{Name: "admin", Groups: []string{user.AllAuthenticated}}
	nobody = &user.DefaultInfo{Name: "nobody"}
)

// escalationFixture is a cluster where alice reads pods everywhere and secrets in
// ns1, carol may escalate ClusterRoles (and the Role "special" of ns1), dave may bind
// admin-all and future-role in ns1, admin holds every permission, and erin has a
// binding to a missing role.
func escalationFixture(t *testing.T) admission.ValidationInterface {
	rbacRule := func(verb, resource string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{resource}, ResourceNames: names}
	}
	authz := NewAuthorizer(newListers(t,
		clusterRole("pod-reader", podReaderRule),
		clusterRole("admin-all", everything, rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}),
		clusterRole("escalator", rbacRule("escalate", "clusterroles")),
		clusterRole("special-escalator", rbacRule("escalate", "roles", "special")),
		clusterRole("binder", rbacRule("bind", "clusterroles", "admin-all", "future-role")),
		role("ns1", "secret-reader", secretRule),
		clusterBinding("readers", "pod-reader", groupSubject("dev")),
		clusterBinding("escalators", "escalator", userSubject("carol")),
		clusterBinding("admins", "admin-all", userSubject("admin")),
		clusterBinding("broken", "missing", userSubject("erin")),
		binding("ns1", "special", "ClusterRole", "special-escalator", userSubject("carol")),
		binding("ns1", "secrets", "Role", "secret-reader", userSubject("alice")),
		binding("ns1", "binders", "ClusterRole", "binder", userSubject("dave")),
	))
	return NewEscalationCheck(authz, authz)
}

// toUnstructured returns obj as the server hands it to admission.
func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func aggregatedRole(name string) *rbacv1.ClusterRole {
	r := clusterRole(name)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"aggregate": "true"}}}}
	return r
}

func withOwner(b *rbacv1.RoleBinding) *rbacv1.RoleBinding {
	b = b.DeepCopy()
	b.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u1"}}
	b.Finalizers = []string{"example.com/wait"}
	return b
}

func TestEscalationCheck(t *testing.T) {
	check := escalationFixture(t)
	deployments := rbacv1.PolicyRule{Verbs: []string{"create", "delete"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}
	aliceMissing := `user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n"
	for _, tc := range []struct {
		name     string
		u        user.Info
		gr       schema.GroupResource
		obj, old runtime.Object
		dryRun   bool
		wantCode int // 0 for allowed
		wantMsg  string
	}{
		{name: "role with held rules", u: alice, gr: RolesGR, obj: role("ns1", "r", podReaderRule, secretRule)},
		{name: "role with rules held elsewhere", u: alice, gr: RolesGR, obj: role("ns2", "r", podReaderRule, secretRule), wantCode: http.StatusForbidden,
			wantMsg: `roles.rbac.authorization.k8s.io "r" is forbidden: ` + aliceMissing + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{name: "missing rules compacted and sorted", u: alice, gr: ClusterRolesGR, wantCode: http.StatusForbidden,
			obj: clusterRole("r", deployments, rbacv1.PolicyRule{Verbs: []string{"get", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a"}},
				rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}, podReaderRule),
			wantMsg: `clusterroles.rbac.authorization.k8s.io "r" is forbidden: ` + aliceMissing +
				`{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["delete"]}` + "\n" +
				`{APIGroups:["apps"], Resources:["deployments"], Verbs:["create" "delete"]}` + "\n" +
				`{NonResourceURLs:["/metrics"], Verbs:["get"]}`},
		{name: "dry run checked too", u: alice, gr: ClusterRolesGR, obj: clusterRole("r", deployments), dryRun: true, wantCode: http.StatusForbidden,
			wantMsg: `clusterroles.rbac.authorization.k8s.io "r" is forbidden: ` + aliceMissing + `{APIGroups:["apps"], Resources:["deployments"], Verbs:["create" "delete"]}`},
		{name: "cluster role with namespaced rules", u: alice, gr: ClusterRolesGR, obj: clusterRole("r", secretRule), wantCode: http.StatusForbidden,
			wantMsg: `clusterroles.rbac.authorization.k8s.io "r" is forbidden: ` + aliceMissing + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{name: "resolution errors reported", u: erin, gr: RolesGR, obj: role("ns1", "r", secretRule), wantCode: http.StatusForbidden,
			wantMsg: `roles.rbac.authorization.k8s.io "r" is forbidden: user "erin" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}; resolution errors: [clusterrole.rbac.authorization.k8s.io "missing" not found]`},
		{name: "system:masters", u: root, gr: ClusterRolesGR, obj: clusterRole("r", everything)},
		{name: "escalate verb", u: carol, gr: ClusterRolesGR, obj: clusterRole("r", everything)},
		{name: "escalate verb on other resources", u: carol, gr: RolesGR, obj: role("ns2", "r", everything), wantCode: http.StatusForbidden,
			wantMsg: `roles.rbac.authorization.k8s.io "r" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`},
		{name: "escalate by name allows an update", u: carol, gr: RolesGR, obj: role("ns1", "special", everything), old: role("ns1", "special")},
		{name: "escalate by name does not allow a creation", u: carol, gr: RolesGR, obj: role("ns1", "special", everything), wantCode: http.StatusForbidden,
			wantMsg: `roles.rbac.authorization.k8s.io "special" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`},
		{name: "aggregation rule", u: alice, gr: ClusterRolesGR, obj: aggregatedRole("agg"), wantCode: http.StatusForbidden,
			wantMsg: `clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{name: "aggregation rule removed", u: alice, gr: ClusterRolesGR, obj: clusterRole("agg"), old: aggregatedRole("agg"), wantCode: http.StatusForbidden,
			wantMsg: `clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{name: "aggregation rule by a holder of every permission", u: admin, gr: ClusterRolesGR, obj: aggregatedRole("agg")},
		{name: "update of finalizers only", u: alice, gr: RolesGR, obj: withFinalizer(role("ns2", "r", everything)), old: role("ns2", "r", everything)},
		{name: "update of rules", u: alice, gr: RolesGR, obj: role("ns2", "r", everything), old: role("ns2", "r"), wantCode: http.StatusForbidden,
			wantMsg: `roles.rbac.authorization.k8s.io "r" is forbidden: ` + aliceMissing + `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runCheck(t, check, tc.u, tc.gr, tc.obj, tc.old, tc.dryRun, tc.wantCode, tc.wantMsg)
		})
	}
}

func withFinalizer(r *rbacv1.Role) *rbacv1.Role {
	r = r.DeepCopy()
	r.Finalizers = []string{"example.com/wait"}
	return r
}

func TestBindCheck(t *testing.T) {
	check := escalationFixture(t)
	adminBinding := binding("ns1", "b", "ClusterRole", "admin-all", userSubject("bob"))
	for _, tc := range []struct {
		name     string
		u        user.Info
		gr       schema.GroupResource
		obj, old runtime.Object
		wantCode int
		wantMsg  string
	}{
		{name: "cluster role held", u: alice, gr: RoleBindingsGR, obj: binding("ns1", "b", "ClusterRole", "pod-reader", userSubject("bob"))},
		{name: "role held in the namespace", u: alice, gr: RoleBindingsGR, obj: binding("ns1", "b", "Role", "secret-reader", userSubject("bob"))},
		{name: "cluster role held cluster-wide", u: alice, gr: ClusterRoleBindingsGR, obj: clusterBinding("b", "pod-reader", userSubject("bob"))},
		{name: "cluster role not held", u: alice, gr: RoleBindingsGR, obj: adminBinding, wantCode: http.StatusForbidden,
			wantMsg: `rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:["*"], Resources:["*"], Verbs:["*"]}` + "\n" + `{NonResourceURLs:["*"], Verbs:["*"]}`},
		{name: "missing cluster role", u: alice, gr: RoleBindingsGR, obj: binding("ns1", "b", "ClusterRole", "missing"), wantCode: http.StatusNotFound,
			wantMsg: `clusterroles.rbac.authorization.k8s.io "missing" not found`},
		{name: "missing role", u: alice, gr: RoleBindingsGR, obj: binding("ns2", "b", "Role", "secret-reader"), wantCode: http.StatusNotFound,
			wantMsg: `roles.rbac.authorization.k8s.io "secret-reader" not found`},
		{name: "bind verb", u: dave, gr: RoleBindingsGR, obj: adminBinding},
		{name: "bind verb for a role yet to exist", u: dave, gr: RoleBindingsGR, obj: binding("ns1", "b", "ClusterRole", "future-role")},
		{name: "bind verb of another namespace", u: dave, gr: RoleBindingsGR, obj: binding("ns2", "b", "ClusterRole", "admin-all"), wantCode: http.StatusForbidden,
			wantMsg: `rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "dave" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:["*"], Resources:["*"], Verbs:["*"]}` + "\n" + `{NonResourceURLs:["*"], Verbs:["*"]}`},
		{name: "bind verb of a namespace is not cluster-wide", u: dave, gr: ClusterRoleBindingsGR, obj: clusterBinding("b", "admin-all"), wantCode: http.StatusForbidden,
			wantMsg: `clusterrolebindings.rbac.authorization.k8s.io "b" is forbidden: user "dave" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:["*"], Resources:["*"], Verbs:["*"]}` + "\n" + `{NonResourceURLs:["*"], Verbs:["*"]}`},
		{name: "system:masters", u: root, gr: ClusterRoleBindingsGR, obj: clusterBinding("b", "missing")},
		{name: "update of subjects is checked", u: alice, gr: RoleBindingsGR, obj: adminBinding, old: binding("ns1", "b", "ClusterRole", "admin-all"), wantCode: http.StatusForbidden,
			wantMsg: `rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:["*"], Resources:["*"], Verbs:["*"]}` + "\n" + `{NonResourceURLs:["*"], Verbs:["*"]}`},
		{name: "update of owners and finalizers only", u: alice, gr: RoleBindingsGR, obj: withOwner(adminBinding), old: adminBinding},
		{name: "no user", u: nil, gr: RoleBindingsGR, obj: binding("ns1", "b", "ClusterRole", "pod-reader"), wantCode: http.StatusForbidden,
			wantMsg: `rolebindings.rbac.authorization.k8s.io "b" is forbidden: no user on the request`},
		{name: "user without rules", u: nobody, gr: ClusterRoleBindingsGR, obj: clusterBinding("b", "pod-reader"), wantCode: http.StatusForbidden,
			wantMsg: `clusterrolebindings.rbac.authorization.k8s.io "b" is forbidden: user "nobody" (groups=[]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runCheck(t, check, tc.u, tc.gr, tc.obj, tc.old, false, tc.wantCode, tc.wantMsg)
		})
	}
}

// runCheck runs check on the creation of obj (an update of old if not nil) and
// compares the outcome.
func runCheck(t *testing.T, check admission.ValidationInterface, u user.Info, gr schema.GroupResource, obj, old runtime.Object, dryRun bool, wantCode int, wantMsg string) {
	t.Helper()
	op, oldObj := admission.Create, runtime.Object(nil)
	if old != nil {
		op, oldObj = admission.Update, toUnstructured(t, old)
	}
	if !check.Handles(op) {
		t.Fatalf("the check does not handle %s", op)
	}
	o := toUnstructured(t, obj)
	attrs := admission.NewAttributesRecord(o, oldObj, schema.GroupVersionKind{Group: gr.Group, Version: "v1", Kind: o.GetKind()},
		o.GetNamespace(), o.GetName(), gr.WithVersion("v1"), "", op, nil, dryRun, u)
	err := check.Validate(t.Context(), attrs, nil)
	if wantCode == 0 {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("error %v (%T), want a status %d", err, err, wantCode)
	}
	if got := status.Status(); int(got.Code) != wantCode || got.Message != wantMsg || got.Details == nil {
		t.Errorf("got %d %q (details %+v)\nwant %d %q", got.Code, got.Message, got.Details, wantCode, wantMsg)
	}
}

func TestEscalationCheckIgnores(t *testing.T) {
	check := escalationFixture(t)
	for _, op := range []admission.Operation{admission.Delete, admission.Connect} {
		if check.Handles(op) {
			t.Errorf("handles %s", op)
		}
	}
	cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "c", "namespace": "ns1"}}}
	role := toUnstructured(t, role("ns2", "r", everything))
	for name, attrs := range map[string]admission.Attributes{
		"other resource": admission.NewAttributesRecord(cm, nil, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "ns1", "c",
			schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "", admission.Create, nil, false, nobody),
		"subresource": admission.NewAttributesRecord(role, nil, RolesGR.WithVersion("v1").GroupVersion().WithKind("Role"), "ns2", "r",
			RolesGR.WithVersion("v1"), "status", admission.Create, nil, false, nobody),
	} {
		if err := check.Validate(t.Context(), attrs, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
