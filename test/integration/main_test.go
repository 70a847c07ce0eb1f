package integration

import (
	"flag"
	"os"
	"testing"
)

// parallel is how many tests run at once unless -test.parallel says otherwise: each
// starts a cluster of its own (a real etcd, real servers) and spends most of its time
// waiting on them, so several share the machine's cores well.
const parallel = "4"

func TestMain(m *testing.M) {
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
