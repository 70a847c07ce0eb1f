// Package guard owns the rule that holds a storage migration to the StorageVersion
// object it started at, and the one exception to it.
//
// A migration the trigger starts records the resourceVersion of the resource's
// StorageVersion object; its rewrites are conditional on that object not having
// moved, and it counts only if it has not. But the object moves for reasons that do
// not touch the encoding: a server's lease lapses and its entry is collected, the
// server registers again in the same version, a new server of the same release joins.
// Under such churn a migration of a million objects would be restarted again and
// again, and never end.
//
// Carried says whether a change leaves the migration valid: it reads the object's
// history between the two resourceVersions (a watch from the first), and answers yes
// only if every revision in it had every server agree on the migration's hash
// (encoding version and write key), as Observe reads it. Then every object written
// meanwhile was written in the version the migration rewrites to, and the migration
// may go on from its checkpoint, guarded by the newer resourceVersion. A revision
// where the servers disagreed, a deletion, or a history no longer readable (compacted)
// answers no, and the migration is replaced as before. The trigger (whether its
// latest migration still counts) and the controller (whether to move a running
// migration's guard forward) ask the same question here, so that they cannot decide
// differently on the same history.
//
// It is a client of the API server: it reads StorageVersion objects through the REST
// API and writes nothing.
package guard
