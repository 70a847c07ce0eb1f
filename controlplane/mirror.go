package controlplane

import (
	"context"
	"fmt"
	"slices"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/lifecycle"
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
// aggregator it runs behind (nil without --aggregator-kubeconfig) and returns the
// storage version manager's Mirror, which feeds it. This wiring stays in the
// composition root, the one place that may import both sides: package storageversion
// (layer 4) may not import the publisher (layer 5), and the publisher is a client
// library for any aggregated server that imports no part of Concord's server (its
// package documentation says so), so it gets no server Feature.
func (i *Instance) newMirror() (func(context.Context, schema.GroupResource, storageversion.Entry) error, error) {
	o := i.opts
	if o.AggregatorKubeconfig == "" {
		return nil, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.AggregatorKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--aggregator-kubeconfig: %w", err)
	}
	compatibility.IdentifyClient(cfg, i.Compatibility.ClientVersion())
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--aggregator-kubeconfig: %w", err)
	}
	v := i.Compatibility.Versions
	i.parts.mirror, err = publisher.New(publisher.Config{Client: client, ServerID: i.ServerID, Kind: mirrorKind,
		Versions:      wire.ComponentVersions{Binary: v.Binary, Emulation: v.Emulation, MinCompatibility: v.MinCompatibility},
		LeaseDuration: o.IdentityLease.LeaseDuration, RenewInterval: o.IdentityLease.RenewInterval, Metrics: i.runtime})
	if err != nil {
		return nil, err
	}
	return i.mirror, nil
}

// mirror is the storage version manager's Mirror: the entries of the resources of
// --aggregated-groups go to the aggregator too, before the server writes in them.
func (i *Instance) mirror(ctx context.Context, gr schema.GroupResource, e storageversion.Entry) error {
	if !slices.Contains(i.opts.AggregatedGroups, gr.Group) {
		return nil
	}
	return i.parts.mirror.Put(ctx, publisher.Resource{GroupResource: gr, EncodingVersion: e.EncodingVersion,
		DecodableVersions: e.DecodableVersions, ServedVersions: e.ServedVersions})
}

// startMirror keeps the identity lease and the entries at the aggregator until the
// server stops, then withdraws them.
func (i *Instance) startMirror(ctx context.Context) error {
	if i.parts.mirror == nil {
		return nil
	}
	return i.start(ctx, lifecycle.Component{Name: "aggregator-storage-versions", Run: i.parts.mirror.Run})
}
