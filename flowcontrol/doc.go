// Package flowcontrol is API priority and fairness for a Concord server (KEP-1040):
// every request is classified by the FlowSchemas and PriorityLevelConfigurations of
// flowcontrol.apiserver.k8s.io/v1, waits in its priority level's fair queues for a
// seat of the server's concurrency limit, and is answered 429 when its level's
// queues are full or it waited too long, so that one tenant's flood does not starve
// the others, and the server's own requests (system:masters, probes) are exempt.
//
// It owns:
//
//   - the handler-chain stage (Controller.Filter), which the server places after
//     impersonation and before authorization, as kube-apiserver does: it sets the
//     X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID response
//     headers, and registers watches so that writes are estimated by how many
//     watchers they wake;
//   - the bootstrap configuration (the mandatory and suggested objects of the
//     release's k8s.io/apiserver), kept in the API by a controller on the reconcile
//     runtime with Kubernetes' rules: missing objects are created; mandatory ones are
//     kept at their bootstrap spec; suggested ones only while their
//     apf.kubernetes.io/autoupdate-spec annotation is "true" (or absent on an object
//     never changed);
//   - the apiserver_flowcontrol_* metrics on the server's /metrics (Gatherer).
//
// Classification, fair queuing, seat borrowing, work estimation and the consumer of
// the configuration (which writes each FlowSchema's Dangling condition) are
// k8s.io/apiserver's flowcontrol library, the implementation kube-apiserver runs; it
// keeps its metrics in component-base's process-wide registry, so servers sharing a
// process (the in-process harness) share those figures.
//
// It does not authenticate or authorize (the user comes from the chain's
// authentication and impersonation stages), does not build the chain (package server
// does), and reaches FlowSchemas and PriorityLevelConfigurations only through the
// server's API with its loopback identity, never through storage.
//
// # Use
//
//	fc, err := flowcontrol.New(flowcontrol.Config{RESTConfig: loopback, ConcurrencyLimit: 600})
//	server.Config{FlowControl: fc.Filter, ExtraMetrics: fc.Gatherer(), ...}
//	lifecycle.Component{Name: "priority-and-fairness", Run: fc.Run, Ready: fc.Ready}
//
// Watches are classified and queued like other reads, but hold their seat only
// until they are admitted, not while they stream. Lists are estimated at the
// minimum of seats: Concord does not yet count each resource's objects, which the
// estimator needs to charge large lists more.
package flowcontrol
