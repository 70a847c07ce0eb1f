package auth

import (
	"errors"
	"net/http"
	"slices"
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

func TestAuthenticatedRead(t *testing.T) {
	authz, err := NewAuthorization([]string{ModeAuthenticatedRead}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nonResource := Attributes{Path: "/metrics"}
	secretsGet := Attributes{Verb: "get", Resource: "secrets", Namespace: "default", Name: "s", ResourceRequest: true}
	ssar := Attributes{APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", ResourceRequest: true}
	sar := Attributes{APIGroup: "authorization.k8s.io", Resource: "subjectaccessreviews", ResourceRequest: true}
	tests := []struct {
		name       string
		attrs      Attributes
		allowed    bool
		reasonPart string
	}{
		{"master creates", with(podsGet, master, "create"), true, ""},
		{"master deletes collection", with(podsGet, master, "deletecollection"), true, ""},
		{"master posts non-resource", with(nonResource, master, "post"), true, ""},
		{"master reads a secret", with(secretsGet, master, "get"), true, ""},
		{"user gets", with(podsGet, alice, "get"), true, ""},
		{"user lists", with(podsGet, alice, "list"), true, ""},
		{"user watches", with(podsGet, alice, "watch"), true, ""},
		{"user creates", with(podsGet, alice, "create"), false, `create is reserved to members of group "system:masters"`},
		{"user updates", with(podsGet, alice, "update"), false, "update is reserved"},
		{"user patches", with(podsGet, alice, "patch"), false, "patch is reserved"},
		{"user deletes", with(podsGet, alice, "delete"), false, "delete is reserved"},
		{"user gets a secret", with(secretsGet, alice, "get"), false, "secrets are reserved"},
		{"user lists secrets", with(secretsGet, alice, "list"), false, "secrets are reserved"},
		{"user asks about itself", with(ssar, alice, "create"), true, ""},
		{"user asks about others", with(sar, alice, "create"), false, "create is reserved"},
		{"user gets non-resource", with(nonResource, alice, "get"), true, ""},
		{"user posts non-resource", with(nonResource, alice, "post"), false, "non-resource"},
		{"anonymous gets non-resource", with(nonResource, nobody, "get"), true, ""},
		{"anonymous heads non-resource", with(nonResource, nobody, "head"), true, ""},
		{"anonymous posts to a health path", Attributes{User: nobody, Verb: "post", Path: "/readyz"}, true, ""},
		{"master gets a profile", Attributes{User: master, Verb: "get", Path: "/debug/pprof/profile"}, true, ""},
		{"user gets a profile", Attributes{User: alice, Verb: "get", Path: "/debug/pprof/heap"}, false, "profiles"},
		{"user gets /debug", Attributes{User: alice, Verb: "get", Path: "/debug"}, false, "profiles"},
		{"user gets /debugger", Attributes{User: alice, Verb: "get", Path: "/debugger"}, true, ""},
		{"anonymous gets resource", with(podsGet, nobody, "get"), false, "anonymous"},
		{"anonymous lists resource", with(podsGet, nobody, "list"), false, "anonymous"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allowed, reason := Decide(t.Context(), authz, tt.attrs)
			if allowed != tt.allowed {
				t.Fatalf("allowed = %v (%s), want %v", allowed, reason, tt.allowed)
			}
			if !strings.Contains(reason, tt.reasonPart) || (tt.allowed && reason != "") {
				t.Errorf("reason %q, want it to contain %q", reason, tt.reasonPart)
			}
		})
	}
}

// TestModes checks the mode list: validation, order (a mode without an opinion
// leaves the request to the next; AlwaysDeny, as in Kubernetes, has none) and that
// masters and health paths pass whatever the modes.
func TestModes(t *testing.T) {
	for _, bad := range [][]string{nil, {"ABAC"}, {ModeRBAC, ModeRBAC}, {"rbac"}} {
		if _, err := NewAuthorization(bad, nil); !errors.Is(err, ErrMode) {
			t.Errorf("modes %q: got %v, want ErrMode", bad, err)
		}
	}
	if _, err := NewAuthorization([]string{ModeRBAC}, nil); !errors.Is(err, ErrMode) {
		t.Errorf("RBAC without its authorizer: got %v, want ErrMode", err)
	}
	deny, err := NewAuthorization([]string{ModeAlwaysDeny}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, reason := Decide(t.Context(), deny, with(podsGet, alice, "get")); ok || !strings.Contains(reason, "Everything is forbidden") {
		t.Errorf("AlwaysDeny: a user's get: allowed=%v reason %q", ok, reason)
	}
	if ok, _ := Decide(t.Context(), deny, with(podsGet, master, "delete")); !ok {
		t.Error("AlwaysDeny: a master's delete was refused")
	}
	if ok, _ := Decide(t.Context(), deny, Attributes{User: nobody, Verb: "get", Path: "/livez/ping"}); !ok {
		t.Error("AlwaysDeny: an anonymous health check was refused")
	}
	readThenAllow, err := NewAuthorization([]string{ModeAuthenticatedRead, ModeAlwaysAllow}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, reason := Decide(t.Context(), readThenAllow, with(podsGet, alice, "delete")); !ok {
		t.Errorf("AuthenticatedRead then AlwaysAllow: a delete was refused (%s)", reason)
	}
}

// TestAuthenticatedReadRules checks what SelfSubjectRulesReview reports in
// ModeAuthenticatedRead: reading and the self reviews, marked incomplete since
// Secrets are the exception.
func TestAuthenticatedReadRules(t *testing.T) {
	authz, err := NewAuthorization([]string{ModeAuthenticatedRead}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, nonRes, incomplete, err := authz.RulesFor(t.Context(), alice.Info(), "default")
	if !incomplete || err == nil || !strings.Contains(err.Error(), "secrets") {
		t.Errorf("incomplete=%v err=%v, want incomplete with an error naming secrets", incomplete, err)
	}
	if len(res) != 1+len(selfReviews) || !slices.Equal(res[0].GetVerbs(), readVerbs) || len(nonRes) != 1 {
		t.Errorf("got %d resource rules (first %v) and %d non-resource rules", len(res), res[0].GetVerbs(), len(nonRes))
	}
	res, _, _, _ = authz.RulesFor(t.Context(), nobody.Info(), "default")
	if len(res) != 0 {
		t.Errorf("anonymous: got %d resource rules, want none", len(res))
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
