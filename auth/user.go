package auth

import (
	"context"
	"slices"

	"k8s.io/apiserver/pkg/authentication/user"
)

// Well-known groups and user names.
const (
	// GroupMasters may do anything.
	GroupMasters = "system:masters"
	// GroupAuthenticated is added to every user who presented a valid token.
	GroupAuthenticated = "system:authenticated"
	// GroupUnauthenticated is the group of AnonymousUser.
	GroupUnauthenticated = "system:unauthenticated"

	// AdminUser is the user of the cluster's admin token.
	AdminUser = "concord-admin"
	// LoopbackUser is the user of a server's own loopback token.
	LoopbackUser = "system:apiserver"
	// AnonymousUser is the user of requests without a valid token to public paths.
	AnonymousUser = "system:anonymous"
)

// User is an authenticated (or anonymous) caller. Values handed out by this package share
// their Groups slice: treat it as read-only.
type User struct {
	// Name identifies the user, e.g. "concord-admin" or "system:anonymous".
	Name string
	// UID is an optional stable identifier, from the token file's third column.
	UID string
	// Groups the user belongs to.
	Groups []string
	// Extra is what else is known of the user (impersonation's Impersonate-Extra-*
	// headers set it), keyed by lower-case names.
	Extra map[string][]string
}

// Info returns u in the form k8s.io/apiserver's libraries take (priority and
// fairness, admission).
func (u User) Info() user.Info {
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// IsMaster reports whether u is in GroupMasters, and so may do anything.
func (u User) IsMaster() bool { return u.inGroup(GroupMasters) }

func (u User) inGroup(group string) bool { return slices.Contains(u.Groups, group) }

// anonymous is the user of unauthenticated requests to public paths.
var anonymous = User{Name: AnonymousUser, Groups: []string{GroupUnauthenticated}}

// Anonymous returns the user of unauthenticated requests to public paths.
func Anonymous() User { return anonymous }

type userKey struct{}

// WithUser returns a copy of ctx carrying u; UserFrom reads it back.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user WithUser put into ctx, and false if there is none. Behind
// the handler chain's authentication every request's context has one.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}
