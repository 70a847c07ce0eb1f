// Package podbinding binds Pods to nodes as kube-apiserver does, for a scheduler (or
// anyone with the right) to assign a Pod: POST of a core/v1 Binding to a Pod's
// binding subresource (pods/<name>/binding) or to the bindings resource of its
// namespace (the Binding names the Pod).
//
// # What it owns
//
//   - Binder.Bind: kube's binding of a Pod. The Binding's target must be a Node's name
//     (kube's validation; kube answers its errors 500); the Pod gets spec.nodeName, the
//     Binding's annotations (and, under PodTopologyLabelsAdmission, its labels), a
//     fresh PodScheduled condition, and loses its nominated node (under
//     ClearingNominatedNodeNameAfterBinding), in one write that skips the Pod's update
//     validation, as kube writes it to storage. A Pod being deleted,
//     already assigned, held by scheduling gates, or (through the subresource) not of
//     the Binding's uid or resourceVersion, is a 409 Conflict; a missing Pod a 404. The answer is a
//     Status Success, 201.
//   - ConfigurePods and ConfigureBindings: the binding subresource of Pods (an
//     action) and the bindings resource (created and answered, never stored: a review
//     of the registry's).
//
// # What it must not touch
//
// Admission runs on the Binding before Bind, as the server admits any creation; Bind
// writes the Pod and nothing else. No scheduler runs in Concord: nothing binds a Pod
// but a client.
package podbinding
