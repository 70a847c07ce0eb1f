// Package namespace gives core/v1 namespaces their Kubernetes behaviour: the hooks
// of their registry.Resource (names are DNS labels; a new namespace is Active with the
// "kubernetes" finalizer in spec.finalizers; a deleted one turns Terminating and stays
// until that finalizer is removed) and the lifecycle controller that empties a
// terminating namespace and then removes the finalizer so that the deletion completes.
//
// Namespaced creations in a missing or terminating namespace are refused by the
// registry's store itself; this package does not touch that.
package namespace
