package ports

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// A port Take returned is reserved for this process: another process, here this test
// binary run again, cannot reserve it while this one runs, and this process does not
// hand it out twice.
func TestPortReservedAcrossProcesses(t *testing.T) {
	if p := os.Getenv("CONCORD_RESERVE_PORT"); p != "" {
		n, _ := strconv.Atoi(p)
		if reserve(n) {
			os.Exit(3)
		}
		os.Exit(0)
	}
	seen := map[int]bool{}
	for range 200 {
		p, err := Take()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	var p int
	for p = range seen {
		break
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPortReservedAcrossProcesses$")
	cmd.Env = append(os.Environ(), "CONCORD_RESERVE_PORT="+strconv.Itoa(p))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("another process reserved port %d, which this one holds: %v\n%s", p, err, out)
	}
}
