package memory

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Options are the memory flag of a server process.
type Options struct {
	// Limit is the most memory the process may use, a quantity of bytes ("12Gi");
	// empty derives it from the machine (DefaultCeiling).
	Limit string
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Limit, "memory-limit", o.Limit,
		"The most memory the process may use (a quantity: 12Gi), a soft limit its garbage collector keeps to; default 90% of the cgroup's memory limit, else 75% of physical memory. GOMEMLIMIT in the environment wins.")
}

// Validate reports an invalid --memory-limit as one line saying what is allowed.
func (o *Options) Validate() []error {
	if o.Limit == "" {
		return nil
	}
	if _, err := o.Ceiling(); err != nil {
		return []error{err}
	}
	return nil
}

// Ceiling is --memory-limit in bytes, or the ceiling derived from the machine.
func (o *Options) Ceiling() (int64, error) {
	if o.Limit == "" {
		return DefaultCeiling()
	}
	q, err := resource.ParseQuantity(o.Limit)
	if err != nil || q.Value() < 64<<20 {
		return 0, fmt.Errorf("--memory-limit %q must be a quantity of bytes of at least 64Mi, such as 12Gi", o.Limit)
	}
	return q.Value(), nil
}
