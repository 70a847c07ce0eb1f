package service

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Options are the flags of Services' cluster IPs and node ports, kube-apiserver's
// (--service-cluster-ip-range, --service-node-port-range), and how long the repair
// controller waits before it takes back a record no Service holds.
type Options struct {
	// ClusterIPRange is one CIDR, or two of different IP families.
	ClusterIPRange string
	// NodePortRange is an inclusive port range, such as 30000-32767.
	NodePortRange string
	// RepairGrace is how long the repair controller keeps an IPAddress or node port
	// record no Service holds (shorter in tests).
	RepairGrace time.Duration
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{ClusterIPRange: DefaultClusterIPRange, NodePortRange: DefaultNodePortRange, RepairGrace: DefaultRepairGrace}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClusterIPRange, "service-cluster-ip-range", o.ClusterIPRange,
		"CIDR from which Services' cluster IPs are allocated (the default ServiceCIDR \"kubernetes\"); two CIDRs of different IP families, comma-separated, for dual-stack.")
	fs.StringVar(&o.NodePortRange, "service-node-port-range", o.NodePortRange,
		"Port range from which NodePort and LoadBalancer Services' node ports are allocated, inclusive at both ends (e.g. 30000-32767).")
	fs.DurationVar(&o.RepairGrace, "service-repair-grace", o.RepairGrace,
		"How long the repair controller keeps an IPAddress or node port record no Service holds before it removes it.")
	_ = fs.MarkHidden("service-repair-grace")
}

// Validate reports each invalid option as one line saying what is allowed.
func (o *Options) Validate() []error {
	var errs []error
	if _, err := ParseClusterIPRanges(o.ClusterIPRange); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseNodePortRange(o.NodePortRange); err != nil {
		errs = append(errs, err)
	}
	if o.RepairGrace <= 0 {
		errs = append(errs, fmt.Errorf("--service-repair-grace %s must be positive", o.RepairGrace))
	}
	return errs
}
