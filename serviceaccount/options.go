package serviceaccount

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// DefaultIssuer is the default --service-account-issuer, kube-apiserver's usual one.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Options are the service account token flags, kube-apiserver's.
type Options struct {
	// Issuer is the "iss" of the tokens the servers issue, and the issuer of their
	// OpenID discovery document (--service-account-issuer).
	Issuer string
	// APIAudiences are the audiences the API accepts in tokens (--api-audiences;
	// default: the issuer).
	APIAudiences []string
	// MaxTokenExpiration caps the lifetime of requested tokens (0: no cap).
	MaxTokenExpiration time.Duration
}

// NewOptions returns the defaults.
func NewOptions() Options { return Options{Issuer: DefaultIssuer} }

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Issuer, "service-account-issuer", o.Issuer,
		"Issuer (iss) of the service account tokens every server of the cluster issues and accepts: an https URL, or a name without a colon (as Kubernetes allows).")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences,
		"Audiences a token must be for to authenticate to the API (default: --service-account-issuer).")
	fs.DurationVar(&o.MaxTokenExpiration, "service-account-max-token-expiration", o.MaxTokenExpiration,
		"Longest lifetime of a requested service account token; longer requests get this lifetime (0: no cap; else at least 1h).")
}

// Validate checks the options as kube-apiserver does: an issuer that is an https URL
// or has no colon, a cap of at least an hour.
func (o *Options) Validate() []error {
	var errs []error
	iss := o.Issuer
	if u, err := url.Parse(iss); iss == "" || (strings.Contains(iss, ":") && (err != nil || u.Scheme != "https" || u.Host == "")) {
		errs = append(errs, fmt.Errorf("--service-account-issuer %q must be an https URL or a name without a colon", iss))
	}
	if d := o.MaxTokenExpiration; d != 0 && d < time.Hour {
		errs = append(errs, fmt.Errorf("--service-account-max-token-expiration %s must be 0 (no cap) or at least 1h", d))
	}
	return errs
}

// Audiences are the audiences the API accepts: --api-audiences, else the issuer.
func (o *Options) Audiences() []string {
	if len(o.APIAudiences) > 0 {
		return o.APIAudiences
	}
	return []string{o.Issuer}
}
