package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509auth "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/klog/v2"
)

// RequestAuthenticator finds the user of a request (TokenAuthenticator, Authentication).
type RequestAuthenticator interface {
	AuthenticateRequest(r *http.Request) (User, bool)
}

// ErrNotAuthenticated means a token is not one this server knows, for TokenReview
// (kube-apiserver's words).
var ErrNotAuthenticated = errors.New("invalid bearer token")

// Authentication authenticates requests: a front proxy's forwarded user first (if
// configured), then an X.509 client certificate signed by the cluster CA, then bearer tokens: the static ones (admin, loopback,
// --token-auth-file), then each of Tokens (service account tokens), in order.
// The static tokens are not bound to audiences: they are valid for the server's own
// (APIAudiences) only, as Kubernetes treats tokens that carry no audience.
type Authentication struct {
	// RequestHeader, if set, authenticates the requests a front proxy forwards
	// (NewRequestHeaderAuthenticator), before anything else.
	RequestHeader authenticator.Request
	// Certificates authenticates X.509 client certificates (NewCertificateAuthenticator),
	// before any token; nil accepts none.
	Certificates authenticator.Request
	Static       *TokenAuthenticator
	// Tokens are further token authenticators (JWTs).
	Tokens []authenticator.Token
	// APIAudiences are the audiences the server's API accepts (--api-audiences).
	APIAudiences authenticator.Audiences
}

// AuthenticateRequest returns the user of the request's bearer token, and false if it
// has none or no authenticator accepts it.
func (a *Authentication) AuthenticateRequest(r *http.Request) (User, bool) {
	if a.RequestHeader != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		resp, ok, err := a.RequestHeader.AuthenticateRequest(r)
		if ok && err == nil {
			return userOf(resp), true
		}
		klog.FromContext(r.Context()).V(4).Info("Not a front proxy's request", "err", err)
	}
	if a.Certificates != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		resp, ok, err := a.Certificates.AuthenticateRequest(r)
		if ok && err == nil {
			return userOf(resp), true
		}
		klog.FromContext(r.Context()).V(4).Info("Client certificate not accepted", "err", err)
	}
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
			return userOf(resp), resp.Audiences, nil
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

// userOf is the User of an authenticator's response, in GroupAuthenticated.
func userOf(resp *authenticator.Response) User {
	info := resp.User
	return User{Name: info.GetName(), UID: info.GetUID(), Groups: withAuthenticated(info.GetGroups()), Extra: info.GetExtra()}
}

// NewCertificateAuthenticator authenticates X.509 client certificates signed by the CA
// of caPEM for client authentication, as Kubernetes does: the user is the subject's
// common name, the groups its organizations (k8s.io/apiserver's x509 authenticator).
func NewCertificateAuthenticator(caPEM []byte) (authenticator.Request, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%w: no CA certificate in the cluster credentials", ErrInvalidCredentials)
	}
	opts := x509auth.DefaultVerifyOptions()
	opts.Roots = pool
	return x509auth.New(opts, x509auth.CommonNameUserConversion), nil
}
