package publisher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/pflag"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
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

// mirrorKind is the identity lease label (Config.Kind) of a Concord server that
// publishes its entries to an aggregator.
const mirrorKind = "concord-aggregated-apiserver"

// NewPublisher builds the publisher of the server's entries at the aggregator of
// --aggregator-kubeconfig (nil, nil without it): cfg, its lease labelled as a Concord
// server's, with a Client of that kubeconfig, which identify may mark as the
// server's (its version headers).
func (o *MirrorOptions) NewPublisher(cfg Config, identify func(*rest.Config)) (*Publisher, error) {
	if o.AggregatorKubeconfig == "" {
		return nil, nil
	}
	cfg.Kind = mirrorKind
	rc, err := clientcmd.BuildConfigFromFlags("", o.AggregatorKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--aggregator-kubeconfig: %w", err)
	}
	identify(rc)
	if cfg.Client, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("--aggregator-kubeconfig: %w", err)
	}
	return New(cfg)
}

// Mirror returns what publishes the server's entry of a resource through p (Put):
// those of --aggregated-groups' resources, and no other. Its signature is that of
// the storage version manager's Config.Mirror (package storageversion), which this
// package does not import.
func (o *MirrorOptions) Mirror(p *Publisher) func(context.Context, schema.GroupResource, apiserverinternalv1alpha1.ServerStorageVersion) error {
	return func(ctx context.Context, gr schema.GroupResource, e apiserverinternalv1alpha1.ServerStorageVersion) error {
		if !slices.Contains(o.AggregatedGroups, gr.Group) {
			return nil
		}
		return p.Put(ctx, Resource{GroupResource: gr, EncodingVersion: e.EncodingVersion,
			DecodableVersions: e.DecodableVersions, ServedVersions: e.ServedVersions})
	}
}
