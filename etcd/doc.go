// Package etcd gives Concord its etcd processes and clients.
//
// It owns three things:
//
//   - running etcd members inside the Concord process ([StartEmbedded] for any member
//     of any cluster, [StartLoopback] for the private single-member etcd that
//     `concord server` and every test harness use when no --etcd-servers are given);
//   - connecting to etcd clusters run elsewhere ([ClientConfig], [NewClient]), with the
//     kube-apiserver flag spellings --etcd-servers, --etcd-cafile, --etcd-certfile and
//     --etcd-keyfile;
//   - the `concord etcd` subcommand ([NewCommand]), one etcd member with etcd's own flag
//     names, for running Concord against a real multi-member cluster.
//
// It hands out *clientv3.Client values and nothing more: what keys mean, how revisions
// become resourceVersions and how objects are encoded belong to the storage and
// registry packages. This package must not import storage, registry, server or any
// Kubernetes API types, and it never reads or writes keys except the one read-only
// probe that proves a cluster answers.
//
// etcd logs through its own zap loggers. They log at "error" unless told otherwise, so
// a healthy member is silent; Concord's own messages go through klog.FromContext.
//
// A test, or a server with no external etcd, starts a loopback member and connects:
//
//	member, err := etcd.StartLoopback(ctx, dataDir, etcd.WithUnsafeNoFsync())
//	if err != nil {
//		return err
//	}
//	defer member.Close()
//	client, err := member.NewClient(ctx)
//	if err != nil {
//		return err
//	}
//	defer client.Close()
//
// Starting the same dataDir again brings back the same member with its data, on new
// ports. A server configured with external etcd does instead:
//
//	var cfg etcd.ClientConfig
//	cfg.AddFlags(flags) // --etcd-servers, --etcd-cafile, ...
//	// after parsing:
//	client, err := etcd.NewClient(ctx, cfg)
//
// NewClient fails, naming the endpoints, unless a quorum answers within the dial
// timeout, so a mistyped URL is reported at start-up rather than on the first request.
// Its client stays with the cluster that answered first: every connection it opens
// again is preceded by a Status call to the member, and a member of another cluster
// is refused ([ErrOtherCluster], logged once).
package etcd
