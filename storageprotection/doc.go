// Package storageprotection completes the deletion of PersistentVolumeClaims,
// PersistentVolumes and VolumeAttributesClasses that nothing uses, as
// kube-controller-manager's pvc-protection, pv-protection and vac-protection
// controllers do. kube's StorageObjectInUseProtection admission plugin (package
// kubesemantics) gives each of them its protection finalizer when it is created; this
// package removes the finalizer once the object's deletion has started and:
//
//   - a claim: no scheduled Pod of its namespace names it (a persistentVolumeClaim
//     volume, or an ephemeral volume of the Pod's own while the Pod is not shut down);
//   - a volume: it is not Bound;
//   - a class: no claim and no volume names it (spec, current or target class).
//
// Without it, a claim would stay Terminating for ever, and so would its namespace.
//
// # What it owns
//
// Controller, level-based on the reconcile runtime: every object being deleted with
// its finalizer is reconciled until the finalizer is gone; one still in use is looked
// at again after RecheckAfter (no Pod events are followed). Several servers may run
// it at once: the writes are idempotent and preconditioned on the object's uid.
// NewFeature is its server wiring: the Controller as the feature the server starts
// with its controllers.
//
// # What it must not touch
//
// It changes nothing but those three finalizers, of objects being deleted; it
// creates, binds and deletes nothing.
package storageprotection
