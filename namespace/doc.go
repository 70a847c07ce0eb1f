// Package namespace gives core/v1 namespaces their Kubernetes behaviour: the hooks
// of their registry.Resource (names are DNS labels; a new namespace is Active with the
// "kubernetes" finalizer in spec.finalizers; a deleted one turns Terminating and stays
// until that finalizer is removed) and the lifecycle controller that empties a
// terminating namespace and then removes the finalizer so that the deletion completes.
//
// It also keeps the system namespaces (default, kube-system, kube-public,
// kube-node-lease) existing, as kube-apiserver's system namespaces controller does
// (SystemController: created at start, again once deleted, checked every minute), and
// refuses to delete default, kube-system and kube-public (403), as Kubernetes'
// NamespaceLifecycle admission does.
//
// Namespaced creations in a missing or terminating namespace are refused by the
// registry's store itself; this package does not touch that.
package namespace
