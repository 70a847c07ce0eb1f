// Package reconcile is the one runtime of Concord's controllers: the CRD controller,
// the namespace controller, the storage version manager and its garbage collector,
// the garbage collector of owner references, the storage-migration trigger and
// controller all run on it.
//
// A controller is level-based. Its Reconciler brings the world in line with one key
// (a resource, an object name) from what it reads now, whatever events led there,
// and says when to look again. The runtime owns everything around it, the same way
// for every controller:
//
//   - a rate-limited work queue of typed keys (client-go's workqueue): a key is
//     processed by one worker at a time, and added again while it is processed it is
//     processed once more afterwards;
//   - workers, started by Run and joined before Run returns;
//   - one rate limiter per controller, made from its Options.Backoff by one
//     constructor;
//   - one retry policy: an error retries the key with per-key exponential backoff;
//     a conflict (another writer got there first, so the newer object is on its way)
//     retries it after a short fixed delay without growing its backoff; a terminal
//     error (TerminalError) is not retried; Result.RequeueAfter looks again later;
//   - one log line and one metric sample per outcome (success, requeue, conflict,
//     error, terminal): concord_controller_reconcile_total and
//     concord_controller_reconcile_duration_seconds, labelled by controller.
//
// It also gives controllers what they share besides: leader election (RunElected for
// one controller's own election; a Campaign, one election that several controllers
// of a process share, as a server's elected controllers share one Lease; both are an
// Elector) and an Event recorder that writes events.k8s.io/v1 Events, or core ones where only
// those are served (NewRecorder).
//
// The queue is the one retry layer above the object store: reconcilers do not loop,
// sleep or back off themselves (registry/store's Update already retries its own
// optimistic-concurrency conflicts when it may). A one-shot client call outside a
// controller's key, or inside a long reconcile such as a migration's run, retries
// through package retry, the one helper for that.
//
// Model: controller-runtime's reconcile package and its controller's reconcileHandler;
// sample-controller's processNextWorkItem.
//
//	c := reconcile.New("namespace", reconcile.Func[string](r.reconcile), reconcile.Options[string]{Workers: 2})
//	informer.AddEventHandler(... c.Add(name) ...)
//	err := c.Run(ctx) // until ctx is done; workers joined
package reconcile
