package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	clientv3 "go.etcd.io/etcd/client/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// rbacTokens are the users of the RBAC tests besides the admin.
const rbacTokens = "alice-token,alice,alice-uid,\"dev\"\nbob-token,bob,bob-uid\n"

// withToken returns cfg authenticating with a bearer token.
func withToken(cfg *rest.Config, token string) *rest.Config {
	c := rest.AnonymousClientConfig(cfg)
	c.BearerToken = token
	return c
}

// errNotYet: a condition eventually retries does not hold yet.
var errNotYet = errors.New("not yet")

// eventually retries f until it returns nil or 30 seconds have passed: another
// server's informers see a new binding a moment after it is written.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// canI asks the server, as the client's user, whether it may verb resource in ns.
func canI(ctx context.Context, c kubernetes.Interface, verb, group, resource, ns string) (bool, error) {
	r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: resource, Namespace: ns,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

func roleBinding(ns, name, kind, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   subjects,
	}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// TestRBAC: two servers decide with the roles and bindings any of them stores, as
// Kubernetes' RBAC authorizer does, and answer the access reviews kubectl uses.
func TestRBAC(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, withTokens(t, rbacTokens))
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	alice := [2]kubernetes.Interface{
		kubernetes.NewForConfigOrDie(withToken(c.Servers[0].Config(), "alice-token")),
		kubernetes.NewForConfigOrDie(withToken(c.Servers[1].Config(), "alice-token")),
	}
	for _, ns := range []string{"team", "other"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Without a binding, alice may do nothing but ask about herself.
	_, err := alice[0].CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
	want := `configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "team"`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("alice lists before any binding: %v, want %q", err, want)
	}

	// A binding written through server 0 is enforced by both servers, in its
	// namespace only.
	if _, err := admin.RbacV1().RoleBindings("team").Create(ctx, roleBinding("team", "alice-view", "ClusterRole", "view", userSubject("alice")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, a := range alice {
		eventually(t, "alice lists configmaps in team through server "+string(rune('0'+i)), func() error {
			_, err := a.CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
			return err
		})
		if _, err := a.CoreV1().ConfigMaps("other").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("server %d: alice lists configmaps in other: %v, want 403", i, err)
		}
		if _, err := a.CoreV1().ConfigMaps("team").Create(ctx, configMap("by-alice", nil), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("server %d: alice creates with view: %v, want 403", i, err)
		}
	}

	checkReviews(t, c, admin, alice[1])
	checkKubectlAuth(t, c.Servers[1])
	checkEscalation(t, admin, alice[0])
	checkAggregation(t, admin, alice[1])
}

// checkReviews: SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview
// for anyone; SubjectAccessReview and LocalSubjectAccessReview for those allowed.
func checkReviews(t *testing.T, c *harness.Cluster, admin, alice kubernetes.Interface) {
	ctx := t.Context()
	for _, tc := range []struct {
		verb, ns string
		want     bool
	}{{"list", "team", true}, {"get", "team", true}, {"delete", "team", false}, {"list", "other", false}} {
		got, err := canI(ctx, alice, tc.verb, "", "configmaps", tc.ns)
		if err != nil || got != tc.want {
			t.Errorf("can alice %s configmaps in %s: %v %v, want %v", tc.verb, tc.ns, got, err, tc.want)
		}
	}
	rules, err := alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasRule(rules.Status.ResourceRules, "list", "configmaps") || hasRule(rules.Status.ResourceRules, "delete", "configmaps") {
		t.Errorf("alice's rules in team: %+v", rules.Status.ResourceRules)
	}
	who, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || who.Status.UserInfo.Username != "alice" || who.Status.UserInfo.UID != "alice-uid" || !slices.Contains(who.Status.UserInfo.Groups, "dev") {
		t.Errorf("alice's SelfSubjectReview: %+v %v", who, err)
	}

	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "watch", Resource: "configmaps", Namespace: "team"},
	}}
	got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil || !got.Status.Allowed || !strings.Contains(got.Status.Reason, `RoleBinding "alice-view/team" of ClusterRole "view" to User "alice"`) {
		t.Errorf("admin asks whether alice may watch: %+v %v", got, err)
	}
	if _, err := alice.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice asks about others: %v, want 403", err)
	}
	sar.Spec.User = ""
	if _, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "at least one of user or group must be specified") {
		t.Errorf("a review naming nobody: %v, want 422", err)
	}
	lsar := &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "team"}, Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps", Namespace: "other"},
	}}
	if _, err := admin.AuthorizationV1().LocalSubjectAccessReviews("team").Create(ctx, lsar, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a local review of another namespace: %v, want 422", err)
	}
	lsar.Spec.ResourceAttributes.Namespace = "team"
	if got, err := admin.AuthorizationV1().LocalSubjectAccessReviews("team").Create(ctx, lsar, metav1.CreateOptions{}); err != nil || !got.Status.Allowed {
		t.Errorf("a local review: %+v %v", got, err)
	}
	// Reviews are created only: there is nothing to read back, and nothing stored.
	resp, body := do(t, c.Servers[0].Config(), http.MethodGet, "/apis/authorization.k8s.io/v1/subjectaccessreviews", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET subjectaccessreviews: %d %s, want 405", resp.StatusCode, body)
	}
	err = alice.AuthorizationV1().RESTClient().Post().Resource("selfsubjectaccessreviews").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Body(&authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"}},
	}).Do(ctx).Error()
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Code != http.StatusNotAcceptable {
		t.Errorf("a review asked for as a Table: %v, want 406", err)
	}
	checkNothingStored(t, c, "authorization.k8s.io")
	if _, err := admin.InternalV1alpha1().StorageVersions().Get(ctx, "authorization.k8s.io.subjectaccessreviews", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the StorageVersion of subjectaccessreviews: %v, want 404 (reviews store nothing)", err)
	}
	list, err := admin.Discovery().ServerResourcesForGroupVersion("authorization.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.APIResources {
		if !slices.Equal(r.Verbs, metav1.Verbs{"create"}) {
			t.Errorf("discovery: %s has verbs %v, want [create]", r.Name, r.Verbs)
		}
	}
	_, doc := do(t, c.Servers[0].Config(), http.MethodGet, "/openapi/v3/apis/authorization.k8s.io/v1", nil)
	if !strings.Contains(doc, `"/apis/authorization.k8s.io/v1/subjectaccessreviews":{"post"`) || strings.Contains(doc, `/apis/authorization.k8s.io/v1/subjectaccessreviews/{name}`) {
		t.Errorf("OpenAPI v3 of authorization.k8s.io/v1 does not show subjectaccessreviews as create-only")
	}
}

// checkKubectlAuth: kubectl auth can-i and whoami, as alice, answer from the reviews.
func checkKubectlAuth(t *testing.T, s *harness.Server) {
	kubectl := kubectlOrSkip(t, s)
	asAlice := func(args ...string) (string, error) {
		return kubectl(append([]string{"--token", "alice-token"}, args...)...)
	}
	if out, err := asAlice("auth", "can-i", "list", "configmaps", "-n", "team"); err != nil || strings.TrimSpace(out) != "yes" {
		t.Errorf("kubectl auth can-i list configmaps -n team: %q %v, want yes", out, err)
	}
	if out, err := asAlice("auth", "can-i", "list", "configmaps", "-n", "other"); err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("kubectl auth can-i list configmaps -n other: %q %v, want no and a non-zero exit", out, err)
	}
	out, err := asAlice("auth", "can-i", "--list", "-n", "team")
	if err != nil || !strings.Contains(out, "configmaps") || !strings.Contains(out, "selfsubjectaccessreviews.authorization.k8s.io") {
		t.Errorf("kubectl auth can-i --list -n team:\n%s%v", out, err)
	}
	if out, err := asAlice("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != "alice" {
		t.Errorf("kubectl auth whoami: %q %v", out, err)
	}
	if out, err := kubectl("get", "rolebindings", "-n", "team", "-o", "wide"); err != nil || !strings.Contains(out, "ClusterRole/view") || !strings.Contains(out, "alice") {
		t.Errorf("kubectl get rolebindings -o wide:\n%s%v", out, err)
	}
}

// checkEscalation: a namespace admin may grant what she holds, and nothing more,
// unless she may escalate or bind.
func checkEscalation(t *testing.T, admin, alice kubernetes.Interface) {
	ctx := t.Context()
	if _, err := admin.RbacV1().RoleBindings("team").Create(ctx, roleBinding("team", "alice-admin", "ClusterRole", "admin", userSubject("alice")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice becomes admin of team", func() error {
		_, err := alice.RbacV1().RoleBindings("team").Create(ctx, roleBinding("team", "bob-edit", "ClusterRole", "edit", userSubject("bob")), metav1.CreateOptions{})
		return err
	})
	_, err := alice.RbacV1().RoleBindings("team").Create(ctx, roleBinding("team", "bob-root", "ClusterRole", "cluster-admin", userSubject("bob")), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is attempting to grant RBAC permissions not currently held") {
		t.Fatalf("alice binds cluster-admin: %v, want 403 for escalation", err)
	}
	everything := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "everything"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}
	if _, err := alice.RbacV1().Roles("team").Create(ctx, everything, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice creates a role granting everything: %v, want 403", err)
	}
	small := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "small"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}
	if _, err := alice.RbacV1().Roles("team").Create(ctx, small, metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creates a role she covers: %v", err)
	}
	// Allowed to bind cluster-admin by name, she may.
	binder := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bind-cluster-admin"}, Rules: []rbacv1.PolicyRule{{
		Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"cluster-admin"},
	}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, binder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("team").Create(ctx, roleBinding("team", "alice-binder", "ClusterRole", "bind-cluster-admin", userSubject("alice")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice binds cluster-admin once allowed to bind it", func() error {
		_, err := alice.RbacV1().RoleBindings("team").Create(ctx, roleBinding("team", "bob-root", "ClusterRole", "cluster-admin", userSubject("bob")), metav1.CreateOptions{})
		return err
	})
	// A binding's role cannot change.
	rb, err := admin.RbacV1().RoleBindings("team").Get(ctx, "bob-edit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rb.RoleRef.Name = "view"
	if _, err := admin.RbacV1().RoleBindings("team").Update(ctx, rb, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "roleRef: Invalid value") || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("changing a binding's roleRef: %v, want 422", err)
	}
	bad := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}}
	if _, err := admin.RbacV1().Roles("team").Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "nonResourceURLs") {
		t.Errorf("a Role with nonResourceURLs: %v, want 422", err)
	}
}

// checkAggregation: a ClusterRole labelled to aggregate to view extends view (and
// so edit and admin), and so what alice may do in team.
func checkAggregation(t *testing.T, admin, alice kubernetes.Interface) {
	ctx := t.Context()
	if ok, err := canI(ctx, alice, "list", "example.com", "widgets", "team"); err != nil || ok {
		t.Fatalf("alice may list widgets before the aggregation: %v %v", ok, err)
	}
	widgetReader := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-reader", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, widgetReader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "view aggregates widget-reader", func() error {
		ok, err := canI(ctx, alice, "list", "example.com", "widgets", "team")
		if err == nil && !ok {
			err = errNotYet
		}
		return err
	})
	view, err := admin.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	if err != nil || !hasPolicyRule(view.Rules, "list", "widgets") {
		t.Errorf("view after the aggregation: %v %v", view, err)
	}
}

// checkNothingStored: no key of group is in etcd.
func checkNothingStored(t *testing.T, c *harness.Cluster, group string) {
	t.Helper()
	resp, err := c.EtcdClient.Get(t.Context(), "/registry/"+group, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("%d keys stored under /registry/%s", resp.Count, group)
	}
}

func hasRule(rules []authorizationv1.ResourceRule, verb, resource string) bool {
	for _, r := range rules {
		if (slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) && slices.Contains(r.Resources, resource) {
			return true
		}
	}
	return false
}

func hasPolicyRule(rules []rbacv1.PolicyRule, verb, resource string) bool {
	for _, r := range rules {
		if slices.Contains(r.Verbs, verb) && slices.Contains(r.Resources, resource) {
			return true
		}
	}
	return false
}

// TestAuthorizationModes: --authorization-mode=AuthenticatedRead keeps Concord's
// first model (authenticated users read everything but Secrets), and the reviews
// answer in it.
func TestAuthorizationModes(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, withTokens(t, rbacTokens), harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Auth.AuthorizationModes = []string{"AuthenticatedRead"}
	}))
	ctx := t.Context()
	alice := kubernetes.NewForConfigOrDie(withToken(c.Servers[0].Config(), "alice-token"))
	if _, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("alice lists: %v", err)
	}
	_, err := alice.CoreV1().ConfigMaps("default").Create(ctx, configMap("x", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "authenticated users may only get, list and watch") {
		t.Fatalf("alice creates: %v, want 403", err)
	}
	if _, err := alice.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "secrets are reserved") {
		t.Errorf("alice lists secrets in AuthenticatedRead mode: %v, want 403", err)
	}
	for _, tc := range []struct {
		verb string
		want bool
	}{{"list", true}, {"create", false}} {
		if got, err := canI(ctx, alice, tc.verb, "", "configmaps", "default"); err != nil || got != tc.want {
			t.Errorf("can alice %s configmaps: %v %v", tc.verb, got, err)
		}
	}
	// No bootstrap roles without RBAC.
	if _, err := c.Servers[0].Clientset(t).RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("cluster-admin without RBAC: %v, want 404", err)
	}
}

// grantRead lets user get, list and watch resource of group everywhere (a ClusterRole
// and its ClusterRoleBinding, both named after the user).
func grantRead(t *testing.T, admin kubernetes.Interface, user, group, resource string) {
	t.Helper()
	name := "read-" + resource + "-" + user
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		Verbs: []string{"get", "list", "watch"}, APIGroups: []string{group}, Resources: []string{resource},
	}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{userSubject(user)},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRBACBootstrap: a starting server creates the default roles that are missing and
// gives back what a default role still marked for automatic update lost, keeping what
// an administrator added; a role marked autoupdate "false" is left as edited.
func TestRBACBootstrap(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, withTokens(t, rbacTokens))
	ctx := t.Context()
	roles := c.Servers[0].Clientset(t).RbacV1().ClusterRoles()
	if err := roles.Delete(ctx, "system:basic-user", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	edit, err := roles.Get(ctx, "system:aggregate-to-edit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defaults := slices.Clone(edit.Rules)
	added := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"gadgets"}}
	edit.Rules = append(edit.Rules[1:], added) // one default rule lost, one rule added
	if _, err := roles.Update(ctx, edit, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	view, err := roles.Get(ctx, "system:aggregate-to-view", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	view.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	view.Rules = view.Rules[1:]
	if view, err = roles.Update(ctx, view, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	c.Servers[0].Restart(t)
	roles = c.Servers[0].Clientset(t).RbacV1().ClusterRoles()
	if _, err := roles.Get(ctx, "system:basic-user", metav1.GetOptions{}); err != nil {
		t.Errorf("system:basic-user after a restart: %v", err)
	}
	edit, err = roles.Get(ctx, "system:aggregate-to-edit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if covers, missing := rbacvalidation.Covers(edit.Rules, defaults); !covers {
		t.Errorf("system:aggregate-to-edit after a restart lacks default rules: %v", missing)
	}
	if !slices.ContainsFunc(edit.Rules, func(r rbacv1.PolicyRule) bool { return slices.Equal(r.Resources, added.Resources) }) {
		t.Errorf("system:aggregate-to-edit after a restart lost the added rule")
	}
	after, err := roles.Get(ctx, "system:aggregate-to-view", metav1.GetOptions{})
	if err != nil || len(after.Rules) != len(view.Rules) {
		t.Errorf("system:aggregate-to-view (autoupdate false) after a restart: %d rules, want %d as edited (%v)", len(after.Rules), len(view.Rules), err)
	}

	// An RBAC grant to impersonate a user lets alice act as that user, only.
	admin := c.Servers[0].Clientset(t)
	impersonator := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "impersonate-bob"}, Rules: []rbacv1.PolicyRule{{
		Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"bob"},
	}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, impersonator, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-impersonates-bob"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "impersonate-bob"},
		Subjects:   []rbacv1.Subject{userSubject("alice")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := withToken(c.Servers[0].Config(), "alice-token")
	eventually(t, "alice acts as bob", func() error {
		who, err := kubernetes.NewForConfigOrDie(asUser(alice, "bob")).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err == nil && who.Status.UserInfo.Username != "bob" {
			err = errNotYet
		}
		return err
	})
	_, err = kubernetes.NewForConfigOrDie(asUser(alice, "carol")).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot impersonate resource "users"`) {
		t.Errorf("alice acts as carol: %v, want 403", err)
	}
}

// TestClientCertificates: a client certificate signed by the cluster CA authenticates
// as its common name in its organizations; an expired one, or one of another CA, is
// 401 unless the request also carries a valid token.
func TestClientCertificates(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	resp, err := c.EtcdClient.Get(ctx, "/registry/concord/credentials")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the credentials: %v", err)
	}
	var stored struct{ CACert, CAKey string }
	if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
		t.Fatal(err)
	}
	ca := &auth.ClusterCredentials{CACert: []byte(stored.CACert), CAKey: []byte(stored.CAKey)}
	withCert := func(cfg *rest.Config, certPEM, keyPEM []byte) *rest.Config {
		c := rest.AnonymousClientConfig(cfg)
		c.CertData, c.KeyData = certPEM, keyPEM
		return c
	}
	whoami := func(cfg *rest.Config) (*authenticationv1.SelfSubjectReview, error) {
		return kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	}
	certPEM, keyPEM, err := auth.NewClientCertificate(ca, "dora", []string{"dev", "ops"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	who, err := whoami(withCert(c.Servers[0].Config(), certPEM, keyPEM))
	if err != nil || who.Status.UserInfo.Username != "dora" || !slices.Equal(who.Status.UserInfo.Groups, []string{"dev", "ops", "system:authenticated"}) {
		t.Fatalf("dora's certificate: %+v %v", who, err)
	}
	expiredCert, expiredKey, err := auth.NewClientCertificate(ca, "dora", nil, -time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey, err := certutil.GenerateSelfSignedCertKey("mallory", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for what, pair := range map[string][2][]byte{"expired": {expiredCert, expiredKey}, "of another CA": {otherCert, otherKey}} {
		cfg := withCert(c.Servers[0].Config(), pair[0], pair[1])
		if _, err := whoami(cfg); !apierrors.IsUnauthorized(err) {
			t.Errorf("a certificate %s: %v, want 401", what, err)
		}
		cfg.BearerToken = c.Servers[0].Config().BearerToken
		if who, err := whoami(cfg); err != nil || who.Status.UserInfo.Username != "concord-admin" {
			t.Errorf("a certificate %s with the admin token: %+v %v, want the admin", what, who, err)
		}
	}
}
