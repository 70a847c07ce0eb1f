// Package priorityclass serves scheduling.k8s.io PriorityClasses as Kubernetes does:
// Concord runs no scheduler, but clients (Helm charts, operators, kubectl) create and
// read PriorityClasses and expect Kubernetes' rules and the two system classes.
//
// # What it owns
//
//   - Configure: the 403 that refuses to delete a system class (kube-apiserver's
//     storage of PriorityClasses). Their validation (values, the "system-" prefix,
//     preemptionPolicy, immutability) is kube's PriorityClass strategy's, in package
//     kubesemantics.
//   - Bootstrap: the system classes system-node-critical (2000001000) and
//     system-cluster-critical (2000000000), created at start when missing (the
//     scheduling/bootstrap-system-priority-classes post-start hook).
//   - Its wiring in a server (Feature): where PriorityClasses are served, the
//     bootstrap at start and its post-start hook.
//
// # What it must not touch
//
// It stores nothing itself: PriorityClasses travel the object store like every
// resource, the bootstrap writes through the API. The rule of at most one class
// marked globalDefault, and Pods' priorities, are kube-apiserver's Priority admission
// plugin's (kubesemantics.Admission).
package priorityclass
