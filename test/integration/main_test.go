package integration

import (
	"flag"
	"os"
	"runtime/debug"
	"testing"
)

// parallel is how many tests run at once unless -test.parallel says otherwise: each
// starts a cluster of its own (a real etcd, real servers) and spends most of its time
// waiting on them, so several share the machine's cores well.
const parallel = "4"

// The collector of this process, which runs several clusters at once: at Go's
// default (GOGC=100) marking took a quarter of the package's CPU. Collecting at 200%
// growth, and as often as it takes to stay under 9 GiB, measured 25% less CPU (271 s
// of user time instead of 362 s) at a peak RSS of 9 GB, when the process still held
// every cluster it had started; since the harness lets them go, the peak is 4.1 GB.
// Collecting at 400% or 800% measured no less CPU (a run's CPU varies by 15% on a
// 2-core machine). GOGC and GOMEMLIMIT in the environment win.
const (
	gcPercent   = 200
	memoryLimit = 9 << 30
)

func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(gcPercent)
		debug.SetMemoryLimit(memoryLimit)
	}
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", parallel); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
