package binary_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/concordproject/concord/test/binary"
)

const hello = binary.Module + "/test/binary/testdata/hello"

// Callers that race each other get one executable that runs, and installing it again
// while it is up to date leaves the very file in place.
func TestInstallBuildsOnceAndKeepsWhatIsUpToDate(t *testing.T) {
	paths := make([]string, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() { paths[i], errs[i] = binary.Install(hello) })
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if paths[i] != paths[0] {
			t.Fatalf("Install returned %s and %s for one command", paths[0], paths[i])
		}
	}
	out, err := exec.Command(paths[0]).Output()
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Fatalf("running %s: %q, %v", paths[0], out, err)
	}
	before := inode(t, paths[0])
	again, err := binary.Install(hello)
	if err != nil {
		t.Fatal(err)
	}
	if after := inode(t, again); after != before {
		t.Errorf("an up-to-date executable was replaced (inode %d, then %d)", before, after)
	}
}

func TestInstallSaysWhatFailed(t *testing.T) {
	_, err := binary.Install(binary.Module + "/test/binary/testdata/missing")
	if !errors.Is(err, binary.ErrBuild) || !strings.Contains(err.Error(), "go install") {
		t.Fatalf("Install of a missing package: %v", err)
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A busy process's CPU time grows; a process that is gone has none to read.
func TestCPUTicks(t *testing.T) {
	self := os.Getpid()
	before := binary.CPUTicks(self)
	if before < 0 {
		t.Fatalf("CPUTicks of this process: %d", before)
	}
	for x := 0; binary.CPUTicks(self) == before; x++ {
		_ = fmt.Sprint(x) // burn CPU until a tick is counted
	}
	if got := binary.CPUTicks(1 << 30); got != -1 {
		t.Fatalf("CPUTicks of no process: %d", got)
	}
}
