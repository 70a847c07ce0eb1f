package identity

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Options are the identity lease's flags.
type Options struct {
	// LeaseDuration is how long the lease lasts after each renewal (whole seconds):
	// once it expires, peers collect the server's storage version entries.
	LeaseDuration time.Duration
	// RenewInterval is how often it is renewed.
	RenewInterval time.Duration
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{LeaseDuration: DefaultLeaseDuration, RenewInterval: DefaultRenewInterval}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.LeaseDuration, "identity-lease-duration", o.LeaseDuration,
		"How long the server's identity lease (kube-system) lasts after each renewal, in whole seconds. Peers collect a server's storage version entries once its lease expired.")
	fs.DurationVar(&o.RenewInterval, "identity-lease-renew-interval", o.RenewInterval,
		"How often the server renews its identity lease; shorter than --identity-lease-duration.")
}

// Validate reports each invalid option as one line saying what is allowed.
func (o *Options) Validate() []error {
	var errs []error
	if o.LeaseDuration < time.Second || o.LeaseDuration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--identity-lease-duration %s must be a whole number of seconds, at least 1s", o.LeaseDuration))
	}
	if o.RenewInterval <= 0 || o.RenewInterval >= o.LeaseDuration {
		errs = append(errs, fmt.Errorf("--identity-lease-renew-interval %s must be positive and shorter than --identity-lease-duration %s", o.RenewInterval, o.LeaseDuration))
	}
	return errs
}
