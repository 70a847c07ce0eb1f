package auth

import (
	"errors"
	"net/http"
	"reflect"
	"testing"
)

func TestImpersonationOf(t *testing.T) {
	admin := User{Name: "root", Groups: []string{GroupMasters}}
	check := func(group, resource, sub, ns, name string) Attributes {
		return Attributes{User: admin, Verb: "impersonate", ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		name    string
		headers map[string][]string
		want    *Impersonation
		err     error
	}{
		{"none", nil, nil, nil},
		{"user", map[string][]string{"Impersonate-User": {"bob"}},
			&Impersonation{User: User{Name: "bob", Groups: []string{GroupAuthenticated}}, Checks: []Attributes{check("", "users", "", "", "bob")}}, nil},
		{"user, groups, uid, extra",
			map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"dev", "ops"}, "Impersonate-Uid": {"42"}, "Impersonate-Extra-Scopes%2fA": {"x", "y"}},
			&Impersonation{
				User: User{Name: "bob", UID: "42", Groups: []string{"dev", "ops", GroupAuthenticated}, Extra: map[string][]string{"scopes/a": {"x", "y"}}},
				Checks: []Attributes{check("", "users", "", "", "bob"), check("", "groups", "", "", "dev"), check("", "groups", "", "", "ops"),
					check("authentication.k8s.io", "uids", "", "", "42"),
					check("authentication.k8s.io", "userextras", "scopes/a", "", "x"), check("authentication.k8s.io", "userextras", "scopes/a", "", "y")},
			}, nil},
		{"service account", map[string][]string{"Impersonate-User": {"system:serviceaccount:ns1:builder"}},
			&Impersonation{
				User:   User{Name: "system:serviceaccount:ns1:builder", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", GroupAuthenticated}},
				Checks: []Attributes{check("", "serviceaccounts", "", "ns1", "builder")},
			}, nil},
		{"anonymous", map[string][]string{"Impersonate-User": {AnonymousUser}},
			&Impersonation{User: User{Name: AnonymousUser, Groups: []string{GroupUnauthenticated}}, Checks: []Attributes{check("", "users", "", "", AnonymousUser)}}, nil},
		{"groups without a user", map[string][]string{"Impersonate-Group": {"system:masters"}}, nil, ErrImpersonationWithoutUser},
		{"extra without a user", map[string][]string{"Impersonate-Extra-Foo": {"bar"}}, nil, ErrImpersonationWithoutUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, vs := range tc.headers {
				for _, v := range vs {
					h.Add(k, v)
				}
			}
			got, err := ImpersonationOf(h, admin)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
