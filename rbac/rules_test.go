package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// resourceRequest is a request for verb on resource (with subresource) named name.
func resourceRequest(verb, group, resource, subresource, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{Verb: verb, APIGroup: group, Resource: resource, Subresource: subresource, Name: name, ResourceRequest: true}
}

func TestRuleAllows(t *testing.T) {
	podsGet := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	for _, tc := range []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorizer.AttributesRecord
		want  bool
	}{
		{"exact", podsGet, resourceRequest("get", "", "pods", "", "p"), true},
		{"other verb", podsGet, resourceRequest("list", "", "pods", "", ""), false},
		{"verb wildcard", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}}, resourceRequest("deletecollection", "", "pods", "", ""), true},
		{"other group", podsGet, resourceRequest("get", "apps", "pods", "", ""), false},
		{"group wildcard", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"pods"}}, resourceRequest("get", "example.com", "pods", "", ""), true},
		{"no groups", rbacv1.PolicyRule{Verbs: []string{"get"}, Resources: []string{"pods"}}, resourceRequest("get", "", "pods", "", ""), false},
		{"other resource", podsGet, resourceRequest("get", "", "secrets", "", ""), false},
		{"resource wildcard", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*"}}, resourceRequest("get", "", "secrets", "", ""), true},
		{"resource wildcard covers subresources", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*"}}, resourceRequest("get", "", "pods", "log", ""), true},
		{"resource does not cover its subresources", podsGet, resourceRequest("get", "", "pods", "log", ""), false},
		{"subresource exact", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, resourceRequest("get", "", "pods", "log", ""), true},
		{"subresource does not cover the resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, resourceRequest("get", "", "pods", "", ""), false},
		{"other subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, resourceRequest("get", "", "pods", "exec", ""), false},
		{"any resource's subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}}, resourceRequest("get", "apps", "deployments", "scale", ""), true},
		{"any resource's subresource, another one", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}}, resourceRequest("get", "apps", "deployments", "status", ""), false},
		{"any resource's subresource is no resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}}, resourceRequest("get", "apps", "deployments", "", ""), false},
		{"resource/* is no wildcard", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/*"}}, resourceRequest("get", "", "pods", "log", ""), false},
		{"*/* names the subresource *", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*/*"}}, resourceRequest("get", "", "pods", "log", ""), false},
		{"resource name listed", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a", "b"}}, resourceRequest("get", "", "pods", "", "b"), true},
		{"resource name not listed", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a"}}, resourceRequest("get", "", "pods", "", "c"), false},
		{"resource names and no name", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a"}}, resourceRequest("list", "", "pods", "", ""), false},
		{"resource rule is no URL rule", podsGet, authorizer.AttributesRecord{Verb: "get", Path: "/pods"}, false},
		{"URL exact", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, authorizer.AttributesRecord{Verb: "get", Path: "/healthz"}, true},
		{"URL other", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, authorizer.AttributesRecord{Verb: "get", Path: "/healthz/etcd"}, false},
		{"URL other verb", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, authorizer.AttributesRecord{Verb: "post", Path: "/healthz"}, false},
		{"URL wildcard", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, authorizer.AttributesRecord{Verb: "get", Path: "/metrics"}, true},
		{"URL prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, authorizer.AttributesRecord{Verb: "get", Path: "/healthz/etcd"}, true},
		{"URL prefix is a plain prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api*"}}, authorizer.AttributesRecord{Verb: "get", Path: "/apis/apps"}, true},
		{"URL prefix needs its slash", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, authorizer.AttributesRecord{Verb: "get", Path: "/healthz"}, false},
		{"URL rule is no resource rule", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, resourceRequest("get", "", "pods", "", ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.attrs, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows(%+v, %v) = %v, want %v", tc.attrs, tc.rule, got, tc.want)
			}
		})
	}
}

func TestSubjectIs(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"dev", "system:authenticated"}}
	sa := &user.DefaultInfo{Name: "system:serviceaccount:ns1:robot"}
	for _, tc := range []struct {
		name      string
		u         user.Info
		subject   rbacv1.Subject
		namespace string // the binding's
		want      bool
	}{
		{"user", alice, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}, "", true},
		{"other user", alice, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "bob"}, "", false},
		{"group", alice, rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "dev"}, "", true},
		{"other group", alice, rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "ops"}, "", false},
		{"user is no group", alice, rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "alice"}, "", false},
		{"service account", sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "robot", Namespace: "ns1"}, "", true},
		{"service account of another namespace", sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "robot", Namespace: "ns2"}, "ns1", false},
		{"service account in the binding's namespace", sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}, "ns1", true},
		{"service account outside the binding's namespace", sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}, "ns2", false},
		{"service account without any namespace", sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}, "", false},
		{"other service account", sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "rob", Namespace: "ns1"}, "", false},
		{"service account is no user", alice, rbacv1.Subject{Kind: "ServiceAccount", Name: "alice", Namespace: "ns1"}, "", false},
		{"service account user as a user", sa, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "system:serviceaccount:ns1:robot"}, "", true},
		{"unknown kind", alice, rbacv1.Subject{Kind: "Robot", Name: "alice"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := subjectIs(tc.u, &tc.subject, tc.namespace); got != tc.want {
				t.Errorf("subjectIs(%s, %+v, %q) = %v, want %v", tc.u.GetName(), tc.subject, tc.namespace, got, tc.want)
			}
		})
	}
}
