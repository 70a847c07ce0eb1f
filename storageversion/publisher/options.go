package publisher

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
)

// MirrorOptions are the flags of a Concord server that runs as an aggregated API
// server: the aggregator it is registered behind, where it publishes the
// StorageVersion entries of the groups the aggregator routes to it.
type MirrorOptions struct {
	// AggregatorKubeconfig is the aggregator's kubeconfig (empty: none).
	AggregatorKubeconfig string
	// AggregatedGroups are the groups whose entries are published there.
	AggregatedGroups []string
}

// AddFlags binds the options to fs.
func (o *MirrorOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.AggregatorKubeconfig, "aggregator-kubeconfig", o.AggregatorKubeconfig,
		"Kubeconfig of the aggregator this server is registered behind (an APIService there): the server publishes its StorageVersion entries of --aggregated-groups' resources there too.")
	fs.StringSliceVar(&o.AggregatedGroups, "aggregated-groups", o.AggregatedGroups,
		"API groups the aggregator's APIServices route to this server, with --aggregator-kubeconfig.")
}

// Validate reports each invalid option as one line saying what is allowed.
func (o *MirrorOptions) Validate() []error {
	var errs []error
	if o.AggregatorKubeconfig != "" {
		if _, err := os.Stat(o.AggregatorKubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--aggregator-kubeconfig %q cannot be read: %w", o.AggregatorKubeconfig, err))
		}
	}
	if (o.AggregatorKubeconfig == "") != (len(o.AggregatedGroups) == 0) {
		errs = append(errs, errors.New("--aggregator-kubeconfig and --aggregated-groups must be given together"))
	}
	return errs
}
