// Package upgradecheck answers, before an upgrade or a rollback, the question the
// storage-migration KEP leaves to operators: can a server of the release about to be
// deployed decode every object the cluster has persisted? It is `concord
// upgrade-check --to-version X` (NewCommand).
//
// # What it owns
//
//   - Check, a pure function from what was read (Input) to one Verdict per persisted
//     resource: the StorageStates' persistedStorageVersionHashes (resolved to versions
//     through the hashes of every version of every resource the full API catalog
//     knows, wire.StorageVersionHash), the StorageVersions' encoding versions, the
//     CustomResourceDefinitions' status.storedVersions, set against what a server of
//     the target release has (Release: the versions it decodes and stores of every
//     resource it serves). Blocked verdicts name what unblocks them: the migration to
//     the current storage version, or, when X cannot decode that either, an
//     intermediate release to migrate from first.
//   - The fields: NewFields (the catalog's fields of every version introduced after
//     the target), ScanFields (which of them persisted objects use, read 500 at a time)
//     and the verdicts they block; the fleet (FleetOf: the servers' newest binary and
//     highest minimum compatibility version, a target below which blocks, and whether
//     they are kube-apiservers, whose releases decode CustomResourceDefinitions in
//     v1beta1 too); resources the catalog does not know, resolved through discovery
//     and reported unverified; a target newer than the catalog, judged as its newest.
//   - Report.Print, the table and the advice the command prints, and Report.Err, its
//     one-line error; ClusterRecord, what was read kept as a file (test/kubepeer
//     records kube-apiserver clusters for the ordinary suite).
//   - Reading those inputs from a cluster through client-go (read.go), and building a
//     Release the way a real server is built: compatibility.Options.Complete, then
//     builtin.Configure and the CustomResourceDefinition resource (release.go).
//
// # What it must not touch
//
// It only reads: no write to the cluster, no etcd, no migration started. The rules of
// what a release serves, stores and decodes are the compatibility, builtin and catalog
// packages'; how StorageStates evolve is migration/trigger's. This package applies
// them, it does not restate them: a change there shows here without a change here.
package upgradecheck
