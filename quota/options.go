package quota

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Options are the quota flag of a server, kube-controller-manager's.
type Options struct {
	// SyncPeriod is how often the usage controller recounts every quota.
	SyncPeriod time.Duration
}

// NewOptions returns the defaults.
func NewOptions() Options { return Options{SyncPeriod: DefaultResyncPeriod} }

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.SyncPeriod, "resource-quota-sync-period", o.SyncPeriod,
		"How often every ResourceQuota's usage is recounted in full (which also takes back the charge of a creation that then failed).")
}

// Validate reports an invalid option as one line saying what is allowed.
func (o *Options) Validate() []error {
	if o.SyncPeriod < time.Second {
		return []error{fmt.Errorf("--resource-quota-sync-period %s must be at least 1s", o.SyncPeriod)}
	}
	return nil
}
