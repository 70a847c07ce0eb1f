// Package informers keeps the in-process informers a server answers requests from:
// typed informers of the object store (RBAC's roles and bindings, Services,
// EndpointSlices, APIServices, leases...), one per resource, shared by every feature
// that reads the resource, each started once, by the first component that asks for it.
//
// It owns the sharing and the informer-sync readiness check (Synced, and Check, the
// check SyncCheck). It reads the object store and never writes; it does not decide
// what a feature reads, nor when a feature starts (the composition root does).
//
//	inf := shared.Typed(rbac.RolesGR, func() runtime.Object { return &rbacv1.Role{} })
//	...
//	err := shared.Start(ctx, group, "rbac-informers", errNotSynced, inf)
//
// Model: client-go's SharedInformerFactory, with the object store as the source.
package informers
