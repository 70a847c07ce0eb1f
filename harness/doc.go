// Package harness starts real Concord clusters inside a test process, the way
// net/http/httptest starts real HTTP servers: one call gives a real etcd (embedded, on
// free loopback ports, data in a temporary directory) and N real API servers sharing
// it over TLS, each with its own data directory and admin kubeconfig. Everything is
// stopped by t.Cleanup, and let go of once stopped (the testing package keeps a
// parallel test, and its cleanups, until the run ends; test/integration's
// TestEndedClusterIsReleased holds it to that, there rather than in a test binary of
// the harness's own). The servers' log (klog
// verbosity 2) is kept in memory, its last MiB, and printed when the test fails; a
// subtest that shares its parent's cluster calls Cluster.LogOnFailure for the lines
// written while it ran.
//
// The servers run with the binary's defaults but one: the storage-migration
// controllers run only in clusters started WithStorageMigration (see there why).
// The process-level tests (most of test/e2e, test/hostile, test/safety) start the
// binary, which runs them; test/e2e's harness clusters pass WithStorageMigration.
//
//	c := harness.Start(t, 3)
//	cs := c.Servers[0].Clientset(t)         // client-go, admin credentials
//	c.Servers[1].Stop(t)                    // graceful stop
//	c.Servers[1].Restart(t)                 // same data dir, same port, same ID
//
// The harness uses only public APIs of the packages it starts; it must not reach into
// their internals, so that what tests see is what users get.
package harness
