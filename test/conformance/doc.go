// Package conformance runs Kubernetes' own sig-api-machinery end-to-end specs
// (test/e2e/apimachinery of the k8s.io/kubernetes module, most of them [Conformance])
// against a Concord server, and holds Concord to the checked-in expectations of
// expected.yaml: the specs it must pass, and for each of the others the reason it
// need not (it needs pods, a controller Concord does not run, an issue not yet done,
// or a deliberate difference that docs/conformance.md explains).
//
// The specs are a test binary that test/kubepeer/build.sh builds from the module of a
// release. The specs run in batches, one process each (a spec its batch left without a
// result runs again alone, so that a deadline ends only a spec that hangs by itself),
// several at once, against `concord server` on its embedded etcd at the
// emulation version of the release; with -peer, also against a kube-apiserver of the
// same release with no controller manager, for comparison.
//
//	go test ./test/conformance                        # the short subset (CI)
//	test/conformance/run.sh                           # every spec, both servers, N and N-1
//	go test ./test/conformance -run TestConformance -count=1 -v -timeout 0 \
//	    -args -full -peer -release 1.36.3             # one release by hand
//
// The short subset is the specs of expected.yaml marked short: fast ones covering what
// Concord serves. Without the binary the test skips, saying how to build it, unless
// CONCORD_CONFORMANCE=required (CI builds it first, so there it must run).
//
// The package drives binaries from outside, as a user would: it must not import
// Concord's server packages.
package conformance
