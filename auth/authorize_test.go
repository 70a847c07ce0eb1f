package auth

import (
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	master  = User{Name: AdminUser, Groups: []string{GroupMasters, GroupAuthenticated}}
	alice   = User{Name: "alice", Groups: []string{"dev", GroupAuthenticated}}
	nobody  = anonymous
	podsGet = Attributes{Verb: "get", Resource: "pods", Namespace: "default", Name: "web", ResourceRequest: true}
)

func with(a Attributes, u User, verb string) Attributes {
	a.User, a.Verb = u, verb
	return a
}

func TestAuthorize(t *testing.T) {
	nonResource := Attributes{Path: "/healthz"}
	tests := []struct {
		name       string
		attrs      Attributes
		allowed    bool
		reasonPart string
	}{
		{"master creates", with(podsGet, master, "create"), true, ""},
		{"master deletes collection", with(podsGet, master, "deletecollection"), true, ""},
		{"master posts non-resource", with(nonResource, master, "post"), true, ""},
		{"user gets", with(podsGet, alice, "get"), true, ""},
		{"user lists", with(podsGet, alice, "list"), true, ""},
		{"user watches", with(podsGet, alice, "watch"), true, ""},
		{"user creates", with(podsGet, alice, "create"), false, `create is reserved to members of group "system:masters"`},
		{"user updates", with(podsGet, alice, "update"), false, "update is reserved"},
		{"user patches", with(podsGet, alice, "patch"), false, "patch is reserved"},
		{"user deletes", with(podsGet, alice, "delete"), false, "delete is reserved"},
		{"user gets non-resource", with(nonResource, alice, "get"), true, ""},
		{"user posts non-resource", with(nonResource, alice, "post"), false, "non-resource"},
		{"anonymous gets non-resource", with(nonResource, nobody, "get"), true, ""},
		{"anonymous heads non-resource", with(nonResource, nobody, "head"), true, ""},
		{"master gets a profile", Attributes{User: master, Verb: "get", Path: "/debug/pprof/profile"}, true, ""},
		{"user gets a profile", Attributes{User: alice, Verb: "get", Path: "/debug/pprof/heap"}, false, "profiles"},
		{"user gets /debug", Attributes{User: alice, Verb: "get", Path: "/debug"}, false, "profiles"},
		{"user gets /debugger", Attributes{User: alice, Verb: "get", Path: "/debugger"}, true, ""},
		{"anonymous gets resource", with(podsGet, nobody, "get"), false, "anonymous"},
		{"anonymous lists resource", with(podsGet, nobody, "list"), false, "anonymous"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allowed, reason := Authorize(tt.attrs)
			if allowed != tt.allowed {
				t.Fatalf("allowed = %v (%s), want %v", allowed, reason, tt.allowed)
			}
			if !strings.Contains(reason, tt.reasonPart) || (tt.allowed && reason != "") {
				t.Errorf("reason %q, want it to contain %q", reason, tt.reasonPart)
			}
		})
	}
}

func TestForbidden(t *testing.T) {
	tests := []struct {
		name   string
		attrs  Attributes
		reason string
		want   string
	}{
		{
			name:   "namespaced core resource",
			attrs:  with(podsGet, alice, "delete"),
			reason: "no way",
			want:   `pods "web" is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "default": no way`,
		},
		{
			name:  "cluster-scoped group resource, no name, no reason",
			attrs: Attributes{User: alice, Verb: "create", APIGroup: "apiextensions.k8s.io", Resource: "customresourcedefinitions", ResourceRequest: true},
			want:  `customresourcedefinitions.apiextensions.k8s.io is forbidden: User "alice" cannot create resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope`,
		},
		{
			name:   "subresource",
			attrs:  Attributes{User: alice, Verb: "update", APIGroup: "apps", Resource: "deployments", Subresource: "scale", Namespace: "ns", Name: "d", ResourceRequest: true},
			reason: "r",
			want:   `deployments.apps "d" is forbidden: User "alice" cannot update resource "deployments/scale" in API group "apps" in the namespace "ns": r`,
		},
		{
			name:   "non-resource",
			attrs:  Attributes{User: nobody, Verb: "post", Path: "/metrics"},
			reason: "r",
			want:   `forbidden: User "system:anonymous" cannot post path "/metrics": r`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Forbidden(tt.attrs, tt.reason)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("%v is not a Forbidden error", err)
			}
			status := err.(apierrors.APIStatus).Status()
			if status.Message != tt.want {
				t.Errorf("message\n got %s\nwant %s", status.Message, tt.want)
			}
			if status.Code != http.StatusForbidden || status.Reason != metav1.StatusReasonForbidden {
				t.Errorf("got code %d reason %s", status.Code, status.Reason)
			}
		})
	}
}
