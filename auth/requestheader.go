package auth

import (
	"crypto/x509"
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509auth "k8s.io/apiserver/pkg/authentication/request/x509"
)

// RequestHeaderConfig is how a server authenticates requests an aggregator (a front
// proxy) forwards: a client certificate signed by ClientCA, with one of AllowedNames as
// its common name (any, if empty), vouches for the user the headers name
// (kube-apiserver's --requestheader-* flags).
type RequestHeaderConfig struct {
	// ClientCA is the PEM of the CA that signs the front proxy's client certificates.
	ClientCA []byte
	// AllowedNames are the common names the front proxy's certificate may have.
	AllowedNames []string
	// UsernameHeaders, UIDHeaders and GroupHeaders name the user, its UID and its
	// groups; ExtraHeaderPrefixes start the headers of its extra fields.
	UsernameHeaders, UIDHeaders, GroupHeaders, ExtraHeaderPrefixes []string
}

// NewRequestHeaderAuthenticator authenticates the requests a front proxy forwards, as
// cfg says (k8s.io/apiserver's request-header authenticator behind its certificate
// verifier). A request without a certificate of the front proxy is not authenticated
// by it, and the headers are then ignored.
func NewRequestHeaderAuthenticator(cfg RequestHeaderConfig) (authenticator.Request, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.ClientCA) {
		return nil, fmt.Errorf("%w: no certificate in the request-header client CA", ErrInvalidCredentials)
	}
	headers, err := headerrequest.New(cfg.UsernameHeaders, cfg.UIDHeaders, cfg.GroupHeaders, cfg.ExtraHeaderPrefixes)
	if err != nil {
		return nil, err
	}
	opts := x509auth.DefaultVerifyOptions()
	opts.Roots = pool
	return x509auth.NewVerifier(opts, headers, sets.NewString(cfg.AllowedNames...)), nil
}
