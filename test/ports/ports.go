package ports

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Free returns a loopback TCP port that was free a moment ago, for a process a test
// starts (see Take).
func Free(t testing.TB) int {
	t.Helper()
	p, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Take returns a loopback TCP port that was free a moment ago, below the kernel's
// ephemeral range: every outgoing connection takes its local port from that range,
// and one could take a port chosen there before the process meant to listen on it
// binds it (a start that fails with "address already in use" under load). The port
// is also reserved for this process for as long as it runs (reserve): test processes
// of one run, or of two runs at once, each start servers on the ports they got, and
// two of them must not get the same one.
func Take() (int, error) {
	low := ephemeralLow()
	if span := low - portFloor; span > 1000 {
		for range 100 {
			p := portFloor + rand.IntN(span)
			if !reserve(p) {
				continue
			}
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				_ = l.Close()
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFloor is the lowest port Take returns.
const portFloor = 10000

// reserve takes port p for this process until it exits, against every process that
// reserves ports through this package on the machine, and reports whether it got it.
// The reservation is an exclusive lock (flock) on a file named for the port, in a
// directory every such process shares; the kernel releases it when the process ends,
// however it ends. A lock is per open file, so a port this process already took is
// refused as well. Where no lock can be taken at all, every port is granted and the
// listen check is all there is. The files stay, empty: one per port ever reserved.
func reserve(p int) bool {
	dir := filepath.Join(os.TempDir(), "concord-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return !errors.Is(err, syscall.EWOULDBLOCK)
	}
	reserved.Lock()
	defer reserved.Unlock()
	reserved.files = append(reserved.files, f) // open, and so locked, until the process ends
	return true
}

// reserved holds the files whose locks reserve this process's ports.
var reserved struct {
	sync.Mutex
	files []*os.File
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range; its default elsewhere).
func ephemeralLow() int {
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768
}
