// Package publisher is the StorageVersion API (KEP-2339) for aggregated API servers
// behind a Concord aggregator: a Go library any such server links to publish, through
// the aggregator's API and under an identity of its own, what Concord's servers
// publish for themselves.
//
// # What it owns
//
//   - The server's identity lease: kube-system/<server ID>, labelled
//     apiserver.kubernetes.io/identity=<kind>, created and renewed while Run runs,
//     deleted when it returns. Concord's storage version garbage collector keeps the
//     server's entries while the lease lives and removes them once it lapses.
//   - The server's entry (apiServerID, encodingVersion, decodableVersions,
//     servedVersions) in the StorageVersion "<group>.<resource>" of each resource it
//     persists, with the status recomputed as Concord's servers do
//     (wire.SetStorageVersionEntries); entries checked again periodically, so one
//     removed by anyone is written again; withdrawn when Run returns.
//   - The write barrier (Filter): writes to a resource are answered 503 with
//     Retry-After until its entry is published, as KEP-2339 asks of every server.
//
// The aggregator admits these writes only from an identity an APIService of the
// group names (Concord's annotation storageversion.concord.io/publishers), and only
// for that group; the identity also needs RBAC grants on leases in kube-system and on
// storageversions and their status.
//
// # What it must not touch
//
// It writes the server's own lease and entries, nothing else; it imports no part of
// Concord's server, only the wire contracts and the controller runtime.
//
// # Usage
//
//	p, _ := publisher.New(publisher.Config{Client: aggregatorClient, ServerID: id, Kind: "wardle-apiserver",
//		Resources: []publisher.Resource{{GroupResource: flunders, EncodingVersion: "wardle.example.com/v1beta1",
//			DecodableVersions: []string{"wardle.example.com/v1beta1", "wardle.example.com/v1alpha1"},
//			ServedVersions: []string{"wardle.example.com/v1beta1", "wardle.example.com/v1alpha1"}}}})
//	handler = p.Filter(classify, handler) // before the handlers that write
//	go p.Run(ctx)                         // until the server stops
package publisher
