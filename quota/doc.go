// Package quota owns ResourceQuotas (core/v1 resourcequotas): what Kubernetes' API
// server gives them beyond their strategy (package kubesemantics validates them):
// kubectl's columns, their enforcement by admission, and the usage controller that
// keeps their status.
//
// # Admission
//
// Admission is k8s.io/apiserver's ResourceQuota admission plugin, one per server, fed
// by an informer of the quotas and writing through the server's loopback client. The
// server runs it on every creation and update after validation, before the write
// (server.Config.Admission, store.WriteOptions.Admit): a creation that would exceed a
// quota of its namespace is refused with 403 Forbidden ("exceeded quota: ..."); one
// admitted is charged to the quotas' status.used first, so that servers admitting
// at once cannot overshoot (the charge is an optimistic-concurrency write of the
// quota). A quota whose usage has not been calculated yet refuses what it limits.
// Dry runs are checked, never charged. Concord serves no pods or persistent volume
// claims, so the quotas it enforces are object counts (the count/<resource>.<group>
// names, for built-in and custom resources alike, and the legacy names configmaps,
// secrets, resourcequotas and replicationcontrollers) and Services' (services,
// services.nodeports, services.loadbalancers: Kubernetes' Service evaluator, in
// services.go).
//
// # Usage controller
//
// Controller is the leader-elected usage controller (kube-controller-manager's
// resourcequota controller, on Concord's reconcile runtime): status.hard mirrors
// spec.hard, status.used counts the namespace's objects with a count-only read of
// their keys in etcd (exact as of the recount: an informer's cache could lag behind
// a charge admission has just made). In-process informers of the counted resources
// (monitors: metadata only, started for the resources quotas name once they are
// served, stopped when they no longer are) report deletions. A quota is
// recalculated when created, when its spec changes or its status.hard stops
// mirroring it, when an object it counts is deleted (usage given back), when the
// served resources change, and every resync period, which also takes back a charge
// whose write then failed. Changes of status.used alone are not followed: admission
// charges before the object is stored, and a recalculation then would undo it. For
// the same reason a recount that gives usage back is written only once a second one,
// a second later, agrees: a write charged for but not yet stored is not given back,
// which would let another write in over the quota.
//
// # Wiring
//
// Feature is how one server runs both, where quotas are served: the admission plugin
// (the server puts it in its admission chain) with its informer, and the usage
// controller, started in that order.
//
// # What it must not touch
//
// It serves and stores nothing itself: quotas are stored and served by the registry
// like any resource, and the server decides where admission runs. It reads etcd only
// through the object store's storage (counts under a resource's namespace prefix).
package quota
