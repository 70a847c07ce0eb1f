package rbac

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// newListers returns listers over indexers holding objs (Roles, ClusterRoles and
// bindings).
func newListers(t *testing.T, objs ...runtime.Object) Listers {
	t.Helper()
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	roles, bindings, clusterRoles, clusterBindings := idx(), idx(), idx(), idx()
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *rbacv1.Role:
			err = roles.Add(o)
		case *rbacv1.RoleBinding:
			err = bindings.Add(o)
		case *rbacv1.ClusterRole:
			err = clusterRoles.Add(o)
		case *rbacv1.ClusterRoleBinding:
			err = clusterBindings.Add(o)
		default:
			t.Fatalf("not an RBAC object: %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return Listers{
		Roles:               rbaclisters.NewRoleLister(roles),
		RoleBindings:        rbaclisters.NewRoleBindingLister(bindings),
		ClusterRoles:        rbaclisters.NewClusterRoleLister(clusterRoles),
		ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(clusterBindings),
	}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Rules: rules}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}, Rules: rules}
}

func clusterBinding(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName}, Subjects: subjects}
}

func binding(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName}, Subjects: subjects}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: name}
}

var (
	podReaderRule = rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	healthRule    = rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/healthz/*"}}
	secretRule    = rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}
	everything    = rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}

	alice = &user.DefaultInfo{Name: "alice", Groups: []string{"dev", user.AllAuthenticated}}
	bob   = &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}
	robot = &user.DefaultInfo{Name: "system:serviceaccount:ns1:robot", Groups: []string{"system:serviceaccounts", user.AllAuthenticated}}
)

// fixture is a small cluster: alice reads pods everywhere (as a member of dev) and
// secrets in ns1, the service account ns1/robot administers ns1, everyone may read
// /healthz, and two bindings of alice name roles that do not exist.
func fixture(t *testing.T) *Authorizer {
	return NewAuthorizer(newListers(t,
		clusterRole("pod-reader", podReaderRule),
		clusterRole("health", healthRule),
		clusterRole("admin-all", everything),
		role("ns1", "secret-reader", secretRule),
		clusterBinding("readers", "pod-reader", groupSubject("dev")),
		clusterBinding("health-all", "health", groupSubject(user.AllAuthenticated)),
		clusterBinding("broken", "missing", userSubject("alice")),
		binding("ns1", "secrets", "Role", "secret-reader", userSubject("bob"), userSubject("alice")),
		binding("ns1", "local-admin", "ClusterRole", "admin-all", rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}),
		binding("ns2", "gone", "Role", "missing", userSubject("alice")),
	))
}

func TestAuthorize(t *testing.T) {
	authz := fixture(t)
	for _, tc := range []struct {
		name       string
		u          user.Info
		attrs      authorizer.AttributesRecord
		want       authorizer.Decision
		wantReason string
	}{
		{"cluster role binding to a group", alice, resourceRequest("list", "", "pods", "", ""),
			authorizer.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "dev"`},
		{"role binding to a user", alice, nsRequest("ns1", "get", "secrets", "s"),
			authorizer.DecisionAllow, `RBAC: allowed by RoleBinding "secrets/ns1" of Role "secret-reader" to User "alice"`},
		{"allowed despite a missing role", alice, nsRequest("ns2", "get", "pods", "p"),
			authorizer.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "dev"`},
		{"role binding of another namespace", alice, nsRequest("ns2", "get", "secrets", "s"),
			authorizer.DecisionNoOpinion, `RBAC: [clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "missing" not found]`},
		{"role binding at the cluster scope", alice, resourceRequest("get", "", "secrets", "", "s"),
			authorizer.DecisionNoOpinion, `RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found`},
		{"service account in the binding's namespace", robot, authorizer.AttributesRecord{Verb: "delete", APIGroup: "apps", Resource: "deployments", Namespace: "ns1", Name: "d", ResourceRequest: true},
			authorizer.DecisionAllow, `RBAC: allowed by RoleBinding "local-admin/ns1" of ClusterRole "admin-all" to ServiceAccount "robot/ns1"`},
		{"role binding to a cluster role grants only in its namespace", robot, nsRequest("ns2", "delete", "pods", "p"),
			authorizer.DecisionNoOpinion, ""},
		{"nor cluster-wide", robot, resourceRequest("delete", "", "pods", "", ""),
			authorizer.DecisionNoOpinion, ""},
		{"non-resource URL", bob, authorizer.AttributesRecord{Verb: "get", Path: "/healthz/etcd"},
			authorizer.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "health-all" of ClusterRole "health" to Group "system:authenticated"`},
		{"non-resource URL, other verb", bob, authorizer.AttributesRecord{Verb: "post", Path: "/healthz"},
			authorizer.DecisionNoOpinion, ""},
		{"no user", nil, resourceRequest("get", "", "pods", "", ""), authorizer.DecisionNoOpinion, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.attrs.User = tc.u
			got, reason, err := authz.Authorize(t.Context(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || reason != tc.wantReason {
				t.Errorf("Authorize = %v, %q; want %v, %q", got, reason, tc.want, tc.wantReason)
			}
			if d := authz.ConditionsAwareAuthorize(t.Context(), tc.attrs); d.IsAllow() != (tc.want == authorizer.DecisionAllow) {
				t.Errorf("ConditionsAwareAuthorize allows: %v, want %v", d.IsAllow(), tc.want)
			}
		})
	}
}

func nsRequest(ns, verb, resource, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{Verb: verb, Resource: resource, Namespace: ns, Name: name, ResourceRequest: true}
}

// TestAuthorizeStopsAtFirstAllow checks that the rules after the first that allows
// are not visited, and that every rule is visited otherwise.
func TestAuthorizeStopsAtFirstAllow(t *testing.T) {
	authz := NewAuthorizer(newListers(t,
		clusterRole("many", secretRule, podReaderRule, healthRule),
		clusterBinding("b", "many", userSubject("alice")),
	))
	var seen []string
	authz.visit(alice, "", func(_ fmt.Stringer, rule *rbacv1.PolicyRule, _ error) bool {
		seen = append(seen, rule.Resources...)
		return !RuleAllows(authorizer.AttributesRecord{User: alice, Verb: "get", Resource: "secrets", ResourceRequest: true}, rule)
	})
	if !slices.Equal(seen, []string{"secrets"}) {
		t.Errorf("visited rules of %v, want only the first", seen)
	}
}

// ruleStrings prints resource and non-resource rules, sorted.
func ruleStrings(res []authorizer.ResourceRuleInfo, nonRes []authorizer.NonResourceRuleInfo) []string {
	var out []string
	for _, r := range res {
		out = append(out, fmt.Sprintf("%v %v %v %v", r.GetVerbs(), r.GetAPIGroups(), r.GetResources(), r.GetResourceNames()))
	}
	for _, r := range nonRes {
		out = append(out, fmt.Sprintf("%v %v", r.GetVerbs(), r.GetNonResourceURLs()))
	}
	slices.Sort(out)
	return out
}

func TestRulesFor(t *testing.T) {
	authz := fixture(t)
	for _, tc := range []struct {
		name           string
		u              user.Info
		namespace      string
		want           []string
		wantIncomplete bool
	}{
		{"cluster-wide, a role missing", alice, "", []string{"[get] [/healthz /healthz/*]", "[get list] [] [pods] []"}, true},
		{"in a namespace", alice, "ns1", []string{"[get] [/healthz /healthz/*]", "[get list] [] [pods] []", "[get] [] [secrets] []"}, true},
		{"a cluster role bound in a namespace", robot, "ns1", []string{"[*] [*] [*] []", "[get] [/healthz /healthz/*]"}, false},
		{"elsewhere", robot, "ns2", []string{"[get] [/healthz /healthz/*]"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, nonRes, incomplete, err := authz.RulesFor(t.Context(), tc.u, tc.namespace)
			if incomplete != tc.wantIncomplete || (err != nil) != tc.wantIncomplete {
				t.Errorf("incomplete %v, error %v; want incomplete %v", incomplete, err, tc.wantIncomplete)
			}
			slices.Sort(tc.want)
			if diff := cmp.Diff(tc.want, ruleStrings(res, nonRes)); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRules(t *testing.T) {
	authz := fixture(t)
	rules, err := authz.Rules(bob, "ns1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sortRules([]rbacv1.PolicyRule{healthRule, secretRule}), sortRules(rules)); diff != "" {
		t.Errorf("rules of bob in ns1 (-want +got):\n%s", diff)
	}
	rules, err = authz.Rules(alice, "ns2")
	if err == nil || err.Error() != `[clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "missing" not found]` {
		t.Errorf("error %v, want both missing roles", err)
	}
	if diff := cmp.Diff(sortRules([]rbacv1.PolicyRule{healthRule, podReaderRule}), sortRules(rules)); diff != "" {
		t.Errorf("rules of alice in ns2 (-want +got):\n%s", diff)
	}
}

func sortRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	slices.SortFunc(rules, func(a, b rbacv1.PolicyRule) int { return strings.Compare(a.String(), b.String()) })
	return rules
}

// TestAuthorizeConcurrently runs decisions in parallel (go test -race checks it).
func TestAuthorizeConcurrently(t *testing.T) {
	authz := fixture(t)
	var wg sync.WaitGroup
	decisions := make([]authorizer.Decision, 8)
	for i := range decisions {
		wg.Go(func() {
			decisions[i], _, _ = authz.Authorize(t.Context(), authorizer.AttributesRecord{User: alice, Verb: "get", Resource: "secrets", Namespace: "ns1", ResourceRequest: true})
		})
	}
	wg.Wait()
	for i, d := range decisions {
		if d != authorizer.DecisionAllow {
			t.Errorf("decision %d: %v, want Allow", i, d)
		}
	}
}
