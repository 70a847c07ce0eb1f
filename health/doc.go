// Package health serves a Concord server's probe endpoints, /healthz, /livez and
// /readyz, with the behaviour kube-apiserver's probes have, so that kubelet probes,
// load balancers and `kubectl get --raw /readyz?verbose` work unchanged.
//
// It owns:
//
//   - the Checker contract and its implementations: NamedCheck (a function),
//     PostStartHook (a start-up task that is unhealthy until it reports Done) and Log
//     (kube-apiserver's "log" check: unhealthy once flushing the logs blocks);
//   - Endpoints: the three lists of checks, the built-in "shutdown" readiness check,
//     and the HTTP handlers, including the response format, ?verbose, ?exclude and the
//     per-check sub-paths such as /readyz/poststarthook/<hook>;
//   - the kubernetes_healthcheck and kubernetes_healthchecks_total metrics.
//
// It does not decide which checks a server has (etcd reachability, informer sync and
// so on belong to the packages that know about them), does not authenticate or
// authorize probe requests (the server's handler chain does), and must not import
// server, registry, storage or etcd.
//
// # Responses
//
// GET /readyz answers 200 "ok" when every check passes. When a check fails it answers
// 500 with one line per check and a summary line; the reason is withheld from the
// body, because these endpoints are commonly reachable without credentials, and is
// logged instead (klog, verbosity 2):
//
//	[+]ping ok
//	[-]poststarthook/bootstrap failed: reason withheld
//	[+]shutdown ok
//	readyz check failed
//
// ?verbose (with any value) returns the same list on success, ending in
// "readyz check passed". ?exclude=<name> (repeatable) skips a check; names that match
// no check produce a "warn:" line. GET /readyz/<name> runs one check and returns 200
// "ok" or 500 "internal server error: <reason>"; an unknown name is 404. /healthz and
// /livez behave the same way with their own lists.
//
// # Usage
//
//	probes := health.New(metricsRegistry)
//	bootstrap := health.NewPostStartHook("bootstrap")
//	if err := probes.AddLivez(health.Ping()); err != nil { ... }
//	if err := probes.AddReadyz(health.Ping(), bootstrap); err != nil { ... }
//	probes.Install(mux)
//
//	go func() {
//		if err := runBootstrap(ctx); err != nil {
//			bootstrap.Fail(err) // /readyz/poststarthook/bootstrap shows why
//			return
//		}
//		bootstrap.Done()
//	}()
//
//	// On SIGTERM: stop being ready so load balancers drain, but stay live.
//	probes.ShuttingDown()
//
// Checks may be added while the endpoints are serving; a request evaluates the checks
// present when it starts, in the order they were added.
package health
