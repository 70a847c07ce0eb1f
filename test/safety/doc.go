// Package safety runs a real Concord fleet through what Concord promises to survive,
// and checks its promises against etcd itself.
//
// A fleet is real processes: `concord etcd` (one member, or three where a scenario
// loses one) and `concord server` processes of several releases (--binary-version,
// --emulation-version), each behind a TCP gate to etcd (test/tcpgate) that a scenario
// can cut. A scenario composes, from a seed (-seed), rolling upgrades N-1 → N with graceful stops
// and kill -9, rollbacks (binary and emulation), skip-level upgrades with stepped
// emulation, CustomResourceDefinition storage-version flips and served-version changes,
// storage migrations interrupted by kill -9 of the migration leader, a server cut off
// from etcd for longer than its identity lease, the loss of an etcd member, and a
// rollback below the fleet's minimum compatibility version that must be refused, and
// (where test/kubepeer/build.sh has built kube-apiserver 1.36.3 and 1.37.2) a fleet of
// kube-apiservers with Concord's controller-manager, upgraded, rolled back in
// emulation and forward again, the StorageVersionMigration API lost and back, the
// widgets' storage version flipped at every step (kube_test.go); while
// client-go writers (typed and dynamic; create, update, patch, delete; built-in and
// custom resources) record every operation they start and how it ended, and a field
// writer sets the fields of PodTemplates the API catalog dates to the releases the
// fleet accepts.
//
// The invariants, checked during the run from one etcd watch of every key and after it
// through every live server:
//
//   - the history of every object is linearizable (porcupine, a register per object,
//     operations whose outcome is unknown may or may not have happened), and what etcd
//     holds at the end is what the last acknowledged write left;
//   - every stored object is decodable by every live server that reports the resource;
//   - no object is written in a version no live server had registered for it;
//   - no migration is Running while the servers disagree on the encoding version, and a
//     migration that succeeded left no object of its resource in another encoding;
//   - every field a client wrote and the server accepted is still in etcd, unless a
//     later accepted write changed or removed it (fields_test.go), through every
//     upgrade, rollback and migration;
//   - after quiescence: persisted hashes equal the current one, CRD storedVersions are
//     trimmed, every StorageVersion has one entry per live server and a common
//     encoding version, no identity lease of a server that is gone remains, /readyz is
//     ok and a write goes through on every server, and nothing but leases is written
//     twice in a few seconds;
//   - `concord upgrade-check`, run before every roll to another release, agrees with
//     what happens: after an approval no field is lost; a refusal of a rollback below
//     the minimum compatibility version is matched by a server of that release
//     refusing to join;
//   - no server ever shows a Secret to an identity without a grant: an intruder bound
//     to view (which grants no Secrets) tries to get, list and watch one throughout.
//
// TestSafety is the short profile, part of `go test ./...`; TestTorture the long one:
//
//	go test ./test/safety -run Torture -timeout 0 -args -duration 30m -seed 7
//
// which prints a report (scenarios, faults, operations, anomalies). Its migration-kill
// scenario migrates a million widgets (-migration-kill-objects): 2,000 created through
// the servers, the rest copies of one of them written straight into etcd
// (seed_test.go), with longer to settle; it alone, once:
//
//	go test ./test/safety -run Torture -timeout 0 -args -duration 1s -only migration-kill
//
// Model: etcd's tests/robustness (traffic, failpoints, a linearizability check, a
// report).
//
// A kube fleet publishes no StorageVersions (kube-apiservers on one host share one
// identity) and keeps built-ins in protobuf, which the checker decodes: the checks that
// need StorageVersions, the VersionSkew report or Concord's identity leases are left to
// Concord's fleets; the others hold, and at the end every custom resource must be in
// its storage version.
//
// It tests Concord from outside: it calls no Concord package that serves or stores
// (only wire and migration/api, the contracts clients share, and catalog for the
// release numbers, ports.Free (test/ports), and test/kubepeer for kube-apiserver's flags);
// cache_test.go imports the binary's packages only so that go test's
// cache sees the binary change.
package safety
