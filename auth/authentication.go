package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// RequestAuthenticator finds the user of a request (TokenAuthenticator, Authentication).
type RequestAuthenticator interface {
	AuthenticateRequest(r *http.Request) (User, bool)
}

// ErrNotAuthenticated means a token is not one this server knows, for TokenReview.
var ErrNotAuthenticated = errors.New("the token is not valid for this server")

// Authentication authenticates bearer tokens: the static ones (admin, loopback,
// --token-auth-file) first, then each of Tokens (service account tokens), in order.
// The static tokens are not bound to audiences: they are valid for the server's own
// (APIAudiences) only, as Kubernetes treats tokens that carry no audience.
type Authentication struct {
	Static *TokenAuthenticator
	// Tokens are further token authenticators (JWTs).
	Tokens []authenticator.Token
	// APIAudiences are the audiences the server's API accepts (--api-audiences).
	APIAudiences authenticator.Audiences
}

// AuthenticateRequest returns the user of the request's bearer token, and false if it
// has none or no authenticator accepts it.
func (a *Authentication) AuthenticateRequest(r *http.Request) (User, bool) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return User{}, false
	}
	u, _, err := a.AuthenticateToken(r.Context(), token, nil)
	return u, err == nil
}

// AuthenticateToken returns the user of token if it is valid for audiences (nil: the
// server's own), and the audiences it is valid for among them (TokenReview's
// status.audiences). An unknown or invalid token is an error that says why, wrapping
// ErrNotAuthenticated; it never contains the token.
func (a *Authentication) AuthenticateToken(ctx context.Context, token string, audiences []string) (User, []string, error) {
	wanted := a.APIAudiences
	if len(audiences) > 0 {
		wanted = audiences
	}
	if u, ok := a.Static.authenticate(token); ok {
		if len(audiences) == 0 {
			return u, nil, nil
		}
		if both := a.APIAudiences.Intersect(wanted); len(both) > 0 {
			return u, both, nil
		}
		return User{}, nil, ErrNotAuthenticated
	}
	ctx = authenticator.WithAudiences(ctx, wanted)
	for _, t := range a.Tokens {
		resp, ok, err := t.AuthenticateToken(ctx, token)
		if err != nil {
			return User{}, nil, errors.Join(ErrNotAuthenticated, err)
		}
		if ok {
			info := resp.User
			u := User{Name: info.GetName(), UID: info.GetUID(), Groups: withAuthenticated(info.GetGroups()), Extra: info.GetExtra()}
			return u, resp.Audiences, nil
		}
	}
	return User{}, nil, ErrNotAuthenticated
}

func withAuthenticated(groups []string) []string {
	if slices.Contains(groups, GroupAuthenticated) {
		return groups
	}
	return append(slices.Clone(groups), GroupAuthenticated)
}
