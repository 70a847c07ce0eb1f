// Package versionskew sees version skew in a running control plane, as KEP-4330's
// risks section proposes: every component announces its versions on its identity
// lease, and a controller compares them.
//
// # What it owns
//
//   - The allowance (Check, a pure function over Components): API servers that share
//     storage read what each other writes (each binary within the other's
//     compatibility window [min compatibility, emulation+1]); API servers of one
//     control plane, aggregated ones included, emulate releases at most one minor
//     apart; a controller manager emulates a release within [min compatibility,
//     emulation] of every Concord server.
//   - The report: compatibility.concord.io/v1alpha1 VersionSkew, one cluster-scoped
//     object named "cluster" (the manifest beside this file defines it; package
//     builtin serves it on every server), whose status lists every live component
//     and keeps the condition WithinAllowance. `kubectl get versionskew` shows it;
//     `concord upgrade-check` reads it.
//   - The Controller, elected among the servers: from an informer of identity leases
//     (kube-system Leases labelled wire.LabelAPIServerIdentity or
//     wire.LabelControllerIdentity, with the version labels of
//     wire.ComponentVersions; a component counts while its lease exists, until the
//     identity lease collector deletes it once expired), it writes the report,
//     emits an Event on the lease of each component that leaves the allowance
//     (VersionSkewOutOfAllowance) or comes back (VersionSkewWithinAllowance), and
//     exports concord_version_skew_components and
//     concord_version_skew_out_of_allowance{component,kind,role,emulation}.
//   - Its wiring in a server (Feature): where the VersionSkew API and leases are
//     served, the informer of leases every server runs, the Event recorder, and the
//     controller's election.
//
// Request-level skew (clients outside the allowance, seen by what they send) is
// package compatibility's.
//
// # What it must not touch
//
// It reads leases and writes only the VersionSkew object and Events; it never refuses
// or stops a component (a hard stop is worse than the skew it would prevent). The
// leases are their owners' (package identity for Concord's servers, identity/clientlease
// for the others).
package versionskew
