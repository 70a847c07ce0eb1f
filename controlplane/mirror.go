package controlplane

import (
	"context"
	"fmt"
	"slices"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/storageversion/publisher"
	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// mirrorKind is the identity lease label of a Concord server that publishes its
// entries to an aggregator.
const mirrorKind = "concord-aggregated-apiserver"

// newMirror builds the publisher of this server's StorageVersion entries to the
// aggregator it runs behind (nil without --aggregator-kubeconfig) and returns it with
// the storage version manager's Mirror, which feeds it the entries of the resources of
// --aggregated-groups, before the server writes in them. This wiring stays in the
// composition root, the one place that may import both sides: package storageversion
// (layer 4) may not import the publisher (layer 5), and the publisher is a client
// library for any aggregated server that imports no part of Concord's server.
func newMirror(c *core) (*publisher.Publisher, func(context.Context, schema.GroupResource, storageversion.Entry) error, error) {
	o := c.opts
	if o.Mirror.AggregatorKubeconfig == "" {
		return nil, nil, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Mirror.AggregatorKubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--aggregator-kubeconfig: %w", err)
	}
	compatibility.IdentifyClient(cfg, c.compat.ClientVersion())
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("--aggregator-kubeconfig: %w", err)
	}
	v := c.compat.Versions
	p, err := publisher.New(publisher.Config{Client: client, ServerID: c.id, Kind: mirrorKind,
		Versions:      wire.ComponentVersions{Binary: v.Binary, Emulation: v.Emulation, MinCompatibility: v.MinCompatibility},
		LeaseDuration: o.IdentityLease.LeaseDuration, RenewInterval: o.IdentityLease.RenewInterval, Metrics: c.runtime})
	if err != nil {
		return nil, nil, err
	}
	mirror := func(ctx context.Context, gr schema.GroupResource, e storageversion.Entry) error {
		if !slices.Contains(o.Mirror.AggregatedGroups, gr.Group) {
			return nil
		}
		return p.Put(ctx, publisher.Resource{GroupResource: gr, EncodingVersion: e.EncodingVersion,
			DecodableVersions: e.DecodableVersions, ServedVersions: e.ServedVersions})
	}
	return p, mirror, nil
}
