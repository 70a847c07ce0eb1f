// Package lifecycle is the one component lifecycle of a Concord server: every
// long-running part (etcd, the object store's caches, the HTTP server, the identity
// lease, the storage version manager, every controller) is a Component with a
// Run(ctx) error and an optional readiness check, and a Group starts them in order
// and stops them in the reverse order, each joined before the one before it is
// stopped.
//
// Start order is the order of dependence: what a component needs has started (and is
// ready, if it says when it is) before it starts. Stop order follows: a component
// stops while everything it needs still runs; etcd, started first, stops last.
//
// A component's Run does its own orderly shutdown when its context is done (the
// storage version manager withdraws its entries, the identity lease is deleted, the
// HTTP server drains) and returns when all of it has stopped. A component whose Run
// returns while the group runs has failed; the group reports it (Failed) so that its
// owner stops the rest.
//
// Model: controller-runtime's runnable groups (pkg/manager/runnable_group.go).
//
//	var g lifecycle.Group
//	if err := g.Start(ctx, lifecycle.Component{Name: "etcd", Run: m.Run}); err != nil { ... }
//	...
//	<-ctx.Done() // or g.Failed()
//	err := g.Stop()
package lifecycle
