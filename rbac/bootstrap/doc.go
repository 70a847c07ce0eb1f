// Package bootstrap owns the RBAC objects an API server brings into a cluster by
// itself, with Kubernetes' names, labels and rules, and keeps the aggregated
// ClusterRoles up to date.
//
// # What it owns
//
//   - The bootstrap policy as data (ClusterRoles, ClusterRoleBindings): cluster-admin;
//     the aggregated admin, edit and view and the system:aggregate-to-* roles that
//     feed them; system:basic-user, system:discovery, system:public-info-viewer and
//     system:monitoring; system:auth-delegator (TokenReview and SubjectAccessReview,
//     for servers that delegate to Concord; unbound); system:service-account-issuer-discovery
//     (bound to every service account); and system:concord:controller-manager for
//     Concord's out-of-process controller manager. Every object carries the label
//     kubernetes.io/bootstrapping=rbac-defaults and the annotation
//     rbac.authorization.kubernetes.io/autoupdate=true.
//   - Ensure, the start-up step every server runs (kube-apiserver's
//     rbac/bootstrap-roles post-start hook): it creates what is missing and adds to an
//     existing object, still annotated autoupdate=true, the permissions, subjects,
//     labels, annotations and aggregation selectors it lacks. It never takes anything
//     away, so what an administrator added survives restarts and upgrades, and an
//     object annotated autoupdate=false is left as it is. Servers may run it at once:
//     races end in AlreadyExists or a conflict, which are retried a bounded number of
//     times.
//   - Aggregator, the clusterrole-aggregation controller of kube-controller-manager
//     on Concord's reconcile runtime: the rules of every ClusterRole with an
//     aggregationRule are the union of the rules of the ClusterRoles its selectors
//     match.
//
// # What it must not touch
//
// It decides no request: authorization is the parent package's. It bootstraps no
// namespaced Roles or RoleBindings and none of kube-controller-manager's per-controller
// roles (system:controller:*), since Concord runs no such controllers. It starts no
// informer: the Aggregator's is started by its owner (in a server, package rbac's
// Feature).
//
// # Server wiring
//
// Feature is the bootstrap roles as one server runs them, the wiring the server once
// held: its Start runs Ensure through the server's own client, finishes the
// rbac/bootstrap-roles post-start hook (Checks), and starts the Aggregator elected
// among the servers (reconcile.Elected, through the servers' election of their
// controllers, Lease concord-controllers).
//
// # Usage
//
//	// At start, once the server answers, as itself (system:masters):
//	if err := bootstrap.Ensure(ctx, client); err != nil {
//		return err // names the role or binding that failed
//	}
//
//	// While elected:
//	factory := informers.NewSharedInformerFactory(client, 0)
//	agg, err := bootstrap.NewAggregator(client, factory.Rbac().V1().ClusterRoles().Informer())
//	if err != nil {
//		return err
//	}
//	factory.Start(ctx.Done())
//	defer factory.Shutdown()
//	return agg.Run(ctx) // until ctx is done; workers joined
package bootstrap
