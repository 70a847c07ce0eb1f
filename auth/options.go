package auth

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// Options are the authentication and authorization flags of a server,
// kube-apiserver's.
type Options struct {
	// TokenAuthFile is a static token CSV (token,user,uid,"group1,group2").
	TokenAuthFile string
	// RequestHeaderClientCAFile and RequestHeader authenticate the requests an
	// aggregator forwards, when the server runs as an aggregated API server behind it
	// (the --requestheader-* flags); off while the file is empty.
	RequestHeaderClientCAFile string
	RequestHeader             RequestHeaderConfig
	// AuthorizationModes decide requests, in order (Modes; default RBAC). Members of
	// system:masters may do anything whatever the modes.
	AuthorizationModes []string
}

// NewOptions returns kube-apiserver's defaults.
func NewOptions() Options {
	return Options{
		AuthorizationModes: []string{ModeRBAC},
		RequestHeader: RequestHeaderConfig{
			UsernameHeaders: []string{"X-Remote-User"}, UIDHeaders: []string{"X-Remote-Uid"},
			GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
		},
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, `Static bearer tokens, CSV: token,user,uid,"group1,group2".`)
	fs.StringSliceVar(&o.AuthorizationModes, "authorization-mode", o.AuthorizationModes,
		"Ordered list of authorization modes, each of "+strings.Join(Modes, ", ")+"; the first to allow or deny decides. Members of system:masters may do anything.")
	rh := &o.RequestHeader
	fs.StringVar(&o.RequestHeaderClientCAFile, "requestheader-client-ca-file", o.RequestHeaderClientCAFile,
		"CA (PEM) of the client certificates an aggregator presents when it forwards requests, the user in the headers below; "+
			"its requestheader-client-ca-file (a Concord aggregator publishes it in kube-system/extension-apiserver-authentication). Empty: no forwarded requests.")
	fs.StringSliceVar(&rh.AllowedNames, "requestheader-allowed-names", rh.AllowedNames,
		"Common names the aggregator's client certificate may have (empty: any the CA signed).")
	fs.StringSliceVar(&rh.UsernameHeaders, "requestheader-username-headers", rh.UsernameHeaders, "Headers that name the forwarded user.")
	fs.StringSliceVar(&rh.UIDHeaders, "requestheader-uid-headers", rh.UIDHeaders, "Headers that give the forwarded user's UID.")
	fs.StringSliceVar(&rh.GroupHeaders, "requestheader-group-headers", rh.GroupHeaders, "Headers that give the forwarded user's groups.")
	fs.StringSliceVar(&rh.ExtraHeaderPrefixes, "requestheader-extra-headers-prefix", rh.ExtraHeaderPrefixes, "Prefixes of the headers of the forwarded user's extra fields.")
}

// Validate reports each invalid option as one line saying what is allowed.
func (o *Options) Validate() []error {
	var errs []error
	for _, f := range []struct{ flag, path string }{{"--token-auth-file", o.TokenAuthFile}, {"--requestheader-client-ca-file", o.RequestHeaderClientCAFile}} {
		if f.path != "" {
			if _, err := os.Stat(f.path); err != nil {
				errs = append(errs, fmt.Errorf("%s %q cannot be read: %w", f.flag, f.path, err))
			}
		}
	}
	if err := ValidateModes(o.AuthorizationModes); err != nil {
		errs = append(errs, fmt.Errorf("--authorization-mode: %w", err))
	}
	return errs
}

// Authentication returns a server's authentication of what the flags and the
// cluster's credentials say: static tokens (the admin's, the server's own loopback
// token, --token-auth-file's), client certificates of the cluster CA, and an
// aggregator's forwarded requests (--requestheader-*); tokens must be for audiences.
// Service account tokens' authenticator is added to its Tokens.
func (o *Options) Authentication(creds *ClusterCredentials, loopbackToken string, audiences []string) (*Authentication, error) {
	var fileTokens map[string]User
	if o.TokenAuthFile != "" {
		var err error
		if fileTokens, err = LoadTokenFile(o.TokenAuthFile); err != nil {
			return nil, err
		}
	}
	static, err := NewTokenAuthenticator(fileTokens, creds.AdminToken, loopbackToken)
	if err != nil {
		return nil, err
	}
	certs, err := NewCertificateAuthenticator(creds.CACert)
	if err != nil {
		return nil, err
	}
	requestHeader, err := o.RequestHeaderAuthenticator()
	if err != nil {
		return nil, err
	}
	return &Authentication{RequestHeader: requestHeader, Certificates: certs, Static: static, APIAudiences: audiences}, nil
}

// RequestHeaderAuthenticator authenticates the requests an aggregator forwards
// (--requestheader-client-ca-file), or is nil without it.
func (o *Options) RequestHeaderAuthenticator() (authenticator.Request, error) {
	if o.RequestHeaderClientCAFile == "" {
		return nil, nil
	}
	ca, err := os.ReadFile(o.RequestHeaderClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
	}
	cfg := o.RequestHeader
	cfg.ClientCA = ca
	a, err := NewRequestHeaderAuthenticator(cfg)
	if err != nil {
		return nil, fmt.Errorf("--requestheader-client-ca-file %s: %w", o.RequestHeaderClientCAFile, err)
	}
	return a, nil
}
