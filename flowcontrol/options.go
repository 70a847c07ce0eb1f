package flowcontrol

import (
	"errors"
	"fmt"

	"github.com/concordproject/concord/registry"
	"github.com/spf13/pflag"
)

// Options are API priority and fairness's flags, kube-apiserver's.
type Options struct {
	// Enable classifies, queues and limits requests by the FlowSchemas and
	// PriorityLevelConfigurations (--enable-priority-and-fairness).
	Enable bool
	// MaxRequestsInflight and MaxMutatingRequestsInflight add up to the seats the
	// priority levels share.
	MaxRequestsInflight, MaxMutatingRequestsInflight int
}

// NewOptions returns kube-apiserver's defaults.
func NewOptions() Options {
	return Options{Enable: true, MaxRequestsInflight: 400, MaxMutatingRequestsInflight: 200}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enable, "enable-priority-and-fairness", o.Enable,
		"Classify, queue and limit requests by the FlowSchemas and PriorityLevelConfigurations of flowcontrol.apiserver.k8s.io/v1 (API priority and fairness).")
	fs.IntVar(&o.MaxRequestsInflight, "max-requests-inflight", o.MaxRequestsInflight,
		"With --max-mutating-requests-inflight, the number of requests the server executes at once, shared among priority levels.")
	fs.IntVar(&o.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInflight,
		"With --max-requests-inflight, the number of requests the server executes at once, shared among priority levels.")
}

// Validate reports each invalid option as one line saying what is allowed.
func (o *Options) Validate() []error {
	if o.MaxRequestsInflight < 0 || o.MaxMutatingRequestsInflight < 0 {
		return []error{fmt.Errorf("--max-requests-inflight %d and --max-mutating-requests-inflight %d must not be negative", o.MaxRequestsInflight, o.MaxMutatingRequestsInflight)}
	}
	if o.Enable && o.ConcurrencyLimit() < 1 {
		return []error{errors.New("--max-requests-inflight plus --max-mutating-requests-inflight must be at least 1 with --enable-priority-and-fairness")}
	}
	return nil
}

// ValidateAPI checks the options against resources, the built-in resources the
// server is to serve, before it starts anything: ErrNoAPI when they turn API priority
// and fairness on but do not serve FlowSchemas in v1.
func (o *Options) ValidateAPI(resources []*registry.Resource) error {
	if o.Enable && !registry.Serves(resources, FlowSchemas, "v1") {
		return ErrNoAPI
	}
	return nil
}

// ConcurrencyLimit is how many seats the priority levels share.
func (o *Options) ConcurrencyLimit() int {
	return o.MaxRequestsInflight + o.MaxMutatingRequestsInflight
}

// MaxBodyReadsPerUser is how many of one user's requests may be sending their bodies
// at once (server.Config): a quarter of the in-flight limit, so that a user's stalled
// uploads count against it without taking what the others need (at least 1).
func (o *Options) MaxBodyReadsPerUser() int {
	return max(1, o.ConcurrencyLimit()/4)
}
