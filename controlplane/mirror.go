package controlplane

import (
	"context"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/storageversion/publisher"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// newMirror builds the publisher of this server's StorageVersion entries to the
// aggregator it runs behind (nil without --aggregator-kubeconfig) and returns it with
// the storage version manager's Mirror, which feeds it the entries of the resources of
// --aggregated-groups, before the server writes in them. This wiring stays in the
// composition root, the one place that may import both sides: package storageversion
// (layer 4) may not import the publisher (layer 5), and the publisher is a client
// library for any aggregated server that imports no part of Concord's server.
func newMirror(c *core) (*publisher.Publisher, func(context.Context, schema.GroupResource, storageversion.Entry) error, error) {
	o, compat := c.opts, c.Compatibility
	p, err := o.Mirror.NewPublisher(publisher.Config{ServerID: c.ServerID, Versions: compat.Versions.Component(),
		LeaseDuration: o.IdentityLease.LeaseDuration, RenewInterval: o.IdentityLease.RenewInterval, Metrics: c.ReconcileMetrics},
		func(rc *rest.Config) { compatibility.IdentifyClient(rc, compat.ClientVersion()) })
	if err != nil || p == nil {
		return nil, nil, err
	}
	put := o.Mirror.Mirror(p)
	return p, func(ctx context.Context, gr schema.GroupResource, e storageversion.Entry) error {
		return put(ctx, publisher.Resource{GroupResource: gr, EncodingVersion: e.EncodingVersion,
			DecodableVersions: e.DecodableVersions, ServedVersions: e.ServedVersions})
	}, nil
}
