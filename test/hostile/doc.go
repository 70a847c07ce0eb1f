// Package hostile holds Concord to kube-apiserver's answers on hostile input: the
// requests a careless or malicious client sends (verbs a resource does not serve,
// unclean paths, bodies that lie about their length or never end, decoding and patch
// bombs, bad query parameters, objects too large to store), each sent through the
// real `concord` binary and compared with what a real kube-apiserver of the same
// release answered to the same request.
//
// What kube-apiserver answered is recorded in testdata/kube-<release>.json: per case
// the status code, the Status reason, the sorted field causes, the kind of the body
// and, for the requests a case makes after its hostile one, what they found (that a
// refused request deleted or wrote nothing). The ordinary suite checks Concord
// against the recording case by case; Concord answers with a Status wherever kube
// answers an error as plain text. A case may deviate on purpose (kube answers a 500
// for an object too large for etcd, Concord a 413): it then says why, and what
// Concord answers instead.
//
// Refreshing the recording starts a kube-apiserver peer (package kubepeer; build it
// first with test/kubepeer/build.sh kube-apiserver 1.37.2) on an etcd of its own:
//
//	go test ./test/hostile -run TestHostileInput -args -rewrite
//
// Beside the recorded cases, the package shows what a recording cannot: that 300
// stalled uploads of one user leave another user served and are each answered by the
// request timeout, and that no single request of at most the body limit grows the
// server's resident memory by more than 256 MiB.
//
// The package starts binaries and speaks HTTP; it imports no Concord package but
// the test helpers that start etcd and a peer.
package hostile
