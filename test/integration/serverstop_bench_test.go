package integration

import (
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
)

// BenchmarkServerStop measures how long a graceful stop of a server of a running
// cluster takes (stop-ms/op): its controllers, the drain of its requests and
// watches, its HTTP server's connections.
func BenchmarkServerStop(b *testing.B) {
	s := harness.Start(b, 1).Servers[0]
	var stopping time.Duration
	for b.Loop() {
		began := time.Now()
		s.Stop(b)
		stopping += time.Since(began)
		s.Restart(b)
	}
	b.ReportMetric(float64(stopping.Microseconds())/1000/float64(b.N), "stop-ms/op")
}
