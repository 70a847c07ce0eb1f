// Package podeviction evicts Pods as kube-apiserver does: POST of a policy/v1 (or
// v1beta1) Eviction to a Pod's eviction subresource (pods/<name>/eviction), the
// request kubectl drain and the cluster autoscaler send to delete a Pod within its
// PodDisruptionBudget.
//
// # What it owns
//
//   - Evictor.Evict: kube's eviction rules. A Pod that has finished, is Pending or is
//     already being deleted is deleted without looking at budgets. Otherwise the
//     PodDisruptionBudgets of its namespace whose selectors match its labels decide:
//     more than one is kube's 500; none lets the deletion go; one whose status has
//     not observed its generation, allows no disruption (429 TooManyRequests with a
//     DisruptionBudget cause saying why, as kube words it), a negative count or too
//     many pending disruptions (403) stops it; else its disruptionsAllowed is
//     decremented and the Pod recorded in disruptedPods, one status write of the
//     budget (the store retries it on conflict, rechecking), and the Pod is deleted.
//     A Pod that is not ready is deleted without spending the budget when the budget
//     says unhealthy Pods may always go, or has its desired healthy Pods. The
//     Eviction's deleteOptions are the deletion's: preconditions (checked on the Pod
//     as kube words it), dry run (the request's and the body's must agree), the
//     propagation policy. The answer is a Status Success, 201.
//   - ConfigurePods: the eviction subresource of Pods (a registry.Action).
//
// # What it must not touch
//
// Admission runs on the Eviction before Evict, as the server admits any action.
// Evict writes the budget's status and deletes the Pod through the store, nothing
// else; it does not compute budgets (no disruption controller runs in Concord: a
// budget's status is what its writers wrote) and keeps no Pod for a grace period
// the store does not keep.
package podeviction
