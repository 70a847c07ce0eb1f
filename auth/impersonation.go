package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// ErrImpersonationWithoutUser is returned when a request asks to impersonate groups, a
// UID or extra fields but names no user to impersonate.
var ErrImpersonationWithoutUser = errors.New("impersonating groups, a UID or extra fields requires impersonating a user (" + authenticationv1.ImpersonateUserHeader + ")")

// serviceAccountPrefix starts the user names of service accounts:
// system:serviceaccount:<namespace>:<name>.
const serviceAccountPrefix = "system:serviceaccount:"

// Impersonation is what a request's Impersonate-* headers ask for: to act as User,
// provided the requester may impersonate each of Checks.
type Impersonation struct {
	// User is the user the request runs as once the checks pass. It is in
	// GroupAuthenticated (GroupUnauthenticated for AnonymousUser), as the users
	// authentication produces are.
	User User
	// Checks are the "impersonate" requests the requester must be allowed: the user
	// (a service account's name is checked as that service account), each group, the
	// UID and each extra value, as Kubernetes checks them.
	Checks []Attributes
}

// ImpersonationOf reads the Impersonate-User, Impersonate-Group, Impersonate-Uid and
// Impersonate-Extra-<key> headers of h, sent by requester. It returns nil when h asks
// for no impersonation, and ErrImpersonationWithoutUser when it asks for groups, a UID
// or extra fields without a user.
func ImpersonationOf(h http.Header, requester User) (*Impersonation, error) {
	name := h.Get(authenticationv1.ImpersonateUserHeader)
	groups := h.Values(authenticationv1.ImpersonateGroupHeader)
	uid := h.Get(authenticationv1.ImpersonateUIDHeader)
	extra, err := impersonatedExtra(h)
	if err != nil {
		return nil, err
	}
	if name == "" {
		if len(groups) > 0 || uid != "" || len(extra) > 0 {
			return nil, ErrImpersonationWithoutUser
		}
		return nil, nil
	}
	check := func(group, resource, subresource, namespace, name string) Attributes {
		return Attributes{User: requester, Verb: "impersonate", ResourceRequest: true,
			APIGroup: group, Resource: resource, Subresource: subresource, Namespace: namespace, Name: name}
	}
	imp := &Impersonation{User: User{Name: name, UID: uid, Groups: slices.Clone(groups), Extra: extra}}
	if ns, sa, ok := serviceAccount(name); ok {
		imp.Checks = append(imp.Checks, check("", "serviceaccounts", "", ns, sa))
		if len(groups) == 0 {
			imp.User.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
		}
	} else {
		imp.Checks = append(imp.Checks, check("", "users", "", "", name))
	}
	for _, g := range groups {
		imp.Checks = append(imp.Checks, check("", "groups", "", "", g))
	}
	if uid != "" {
		imp.Checks = append(imp.Checks, check(authenticationv1.GroupName, "uids", "", "", uid))
	}
	for _, key := range sortedKeys(extra) {
		for _, v := range extra[key] {
			imp.Checks = append(imp.Checks, check(authenticationv1.GroupName, "userextras", key, "", v))
		}
	}
	implied := GroupAuthenticated
	if name == AnonymousUser {
		implied = GroupUnauthenticated
	}
	if !slices.Contains(imp.User.Groups, implied) {
		imp.User.Groups = append(imp.User.Groups, implied)
	}
	return imp, nil
}

// RemoveImpersonationHeaders deletes the Impersonate-* headers of h, so that nothing
// downstream acts on them twice.
func RemoveImpersonationHeaders(h http.Header) {
	for key := range h {
		if strings.HasPrefix(key, "Impersonate-") {
			h.Del(key)
		}
	}
}

// impersonatedExtra reads the Impersonate-Extra-<key> headers: keys are
// percent-decoded and lower-cased, as Kubernetes reads them.
func impersonatedExtra(h http.Header) (map[string][]string, error) {
	var extra map[string][]string
	for header, values := range h {
		if !strings.HasPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			continue
		}
		key, err := url.PathUnescape(strings.TrimPrefix(header, authenticationv1.ImpersonateUserExtraHeaderPrefix))
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", header, err)
		}
		if extra == nil {
			extra = map[string][]string{}
		}
		key = strings.ToLower(key)
		extra[key] = append(extra[key], values...)
	}
	return extra, nil
}

// serviceAccount splits a service account's user name into namespace and name.
func serviceAccount(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != "" && !strings.Contains(name, ":")
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
