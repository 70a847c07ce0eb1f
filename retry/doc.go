// Package retry is the one helper for one-shot client calls that may fail for a
// while: a read-modify-write that meets a conflict, a start-up step that races
// another server or finds a server not ready yet, a request the server throttles.
// Controllers never use it: their retry is a requeue through the reconcile runtime's
// rate limiter (package reconcile).
//
// A call names its policy (Conflict, StartUp, or one built from a component's
// options) and which errors are worth another attempt; Do spaces the attempts by the
// policy's backoff (k8s.io/apimachinery's wait.Backoff, the one client-go's retry
// package uses), waits longer when the server asks to (Retry-After), gives each
// attempt its own timeout if the policy has one, and stops when the caller's context
// ends.
//
// It owns no state and starts nothing; it imports no package of Concord.
package retry
