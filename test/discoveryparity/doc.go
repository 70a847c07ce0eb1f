// Package discoveryparity holds Concord's discovery to kube-apiserver's: at each
// emulation version recorded, Concord must list every group, version, resource and
// subresource that a real kube-apiserver of the same release lists, with the same
// verbs, short names, categories, kind, scope, singular name and storage version
// hash, the same preferred version per group, and nothing more but Concord's own
// resources, each declared in the test with its reason.
//
// # What it owns
//
//   - The recordings, testdata/kube-<release>-emulating-<major.minor>.json: what
//     kube-apiserver listed, read through client-go's ServerGroupsAndResources over
//     the per-group-version documents (every version of every group, not only the
//     preferred; those documents carry storageVersionHash, the aggregated one does
//     not). Groups are sorted by name, versions kept in the server's order of
//     priority, resources by name, subresources as "<resource>/<subresource>", verbs,
//     short names and categories sorted: a refresh changes the files only where kube
//     changed.
//   - Read, Write, Load and Compare, which both sides share, and the report:
//     resources kube serves that Concord does not; versions of a resource Concord
//     serves in another version only; resources Concord serves that kube does not
//     (its declared own ones apart); preferred versions; and, per resource or
//     subresource both serve in the same group version, the differences by field,
//     less the differences declared Known (each with its reason: the subresources
//     that are a server's work, the storage version hashes where Concord stores
//     otherwise), which the report lists apart, and a Known that does not happen
//     fails.
//
// TestDiscoveryParity, in test/integration (where the suite's in-process clusters run,
// so that it costs no test binary of its own), starts one Concord server per
// recording at the recording's emulation version and compares it with the recording.
// Its failure message lists every difference, after a summary of counts.
//
// # Refreshing the recordings
//
// The recorder lives beside the kube-apiserver peer (package kubepeer,
// TestRecordDiscovery): it starts kube-apiserver 1.37.2 on a fresh etcd at its own
// release and again with --emulated-version=1.36, and rewrites both files. After
// test/kubepeer/build.sh kube-apiserver 1.37.2:
//
//	CONCORD_KUBEPEER=1 go test ./test/kubepeer -run TestRecordDiscovery -count=1 -args -rewrite
//
// The package imports no Concord package.
package discoveryparity
