// Package namespace gives core/v1 namespaces what Kubernetes' namespace storage and
// controllers do beyond its strategy (which package kubesemantics runs: a new
// namespace is Active with the "kubernetes" finalizer in spec.finalizers, which only
// the finalize subresource changes): the hooks of their registry.Resource (a deleted
// namespace turns Terminating and stays until its spec.finalizers are gone) and the
// lifecycle controller that empties a terminating namespace (its pods first, the rest
// once no pod is left), records what holds it back in the namespace's deletion
// conditions as Kubernetes' namespace controller does, and then removes the finalizer
// through the finalize subresource, so that the deletion completes.
//
// It also keeps the system namespaces (default, kube-system, kube-public,
// kube-node-lease) existing, as kube-apiserver's system namespaces controller does
// (SystemController: created at start, again once deleted, checked every minute), and
// refuses to delete default, kube-system and kube-public (403), as Kubernetes'
// NamespaceLifecycle admission does.
//
// Feature is the package's server wiring: NewFeature builds both controllers and the
// system namespaces controller's post-start hook; Start starts the system namespaces
// early in the server's start-up, StartController the lifecycle controller late.
//
// Namespaced creations in a missing or terminating namespace are refused by the
// registry's store itself; this package does not touch that.
package namespace
