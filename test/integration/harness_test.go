package integration

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
)

// A cluster is garbage once its test has ended, although the test is not: the testing
// package keeps every parallel test, and the cleanups it ran, until the run ends. This
// is package harness's own test; it runs here, in the package whose memory it keeps
// bounded, rather than in a test binary of its own (7.6 s of CPU to link). It is
// serial: it runs first, before the parallel tests fill the heap it collects.
func TestEndedClusterIsReleased(t *testing.T) {
	var ended *testing.T // held here as the testing package holds a parallel test
	var cluster weak.Pointer[harness.Cluster]
	var server weak.Pointer[controlplane.Instance]
	t.Run("cluster", func(t *testing.T) {
		ended = t
		c := harness.Start(t, 1)
		cluster, server = weak.Make(c), weak.Make(c.Servers[0].Instance)
	})
	// The server's last goroutines may still be returning: collect until the cluster
	// is gone, for a while.
	for deadline := time.Now().Add(10 * time.Second); cluster.Value() != nil || server.Value() != nil; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after its test ended, the cluster is still reachable (cluster %v, server %v)",
				cluster.Value() != nil, server.Value() != nil)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(ended)
}
