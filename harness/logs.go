package harness

import (
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2/textlogger"
)

// logVerbosity is the klog verbosity the servers of a cluster log at.
const logVerbosity = 2

// logTail is how much of a cluster's log is kept, and printed when its test fails.
const logTail = 1 << 20

// logs is the log of a cluster's servers. Lines are kept in memory, the last logTail
// bytes of them, and printed when the test fails: going through t.Log instead costs a
// call-site lookup under the test's lock per line, and with a few servers logging at
// verbosity 2 that lock, not the servers, set the pace of the test.
type logs struct {
	mu      sync.Mutex
	buf     []byte
	dropped int
}

// newLogs returns the cluster's log and registers its printing on failure. Registered
// before the servers' shutdown, it runs after it, so that their last lines are in.
func newLogs(t testing.TB) *logs {
	l := &logs{}
	cleanup(t, func() {
		if !t.Failed() {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.dropped > 0 {
			t.Logf("servers' log: the first %d bytes were dropped; the last %d follow", l.dropped, len(l.buf))
		}
		t.Logf("servers' log:\n%s", l.buf)
	})
	return l
}

// end is the position after the last byte ever written to l.
func (l *logs) end() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped + len(l.buf)
}

// printSince prints to t what was written to l from position from on, as much of it as
// is still kept.
func (l *logs) printSince(t testing.TB, from int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	skip := from - l.dropped
	if skip < 0 {
		t.Logf("servers' log since the test started: its first %d bytes were dropped", -skip)
		skip = 0
	}
	t.Logf("servers' log since the test started (other tests' lines included):\n%s", l.buf[skip:])
}

// Write appends one line (textlogger writes a line per call), dropping the oldest
// lines beyond logTail.
func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - logTail; over > 0 {
		// Drop whole lines from the front, and at least logTail/4 at once, so that the
		// copy is paid rarely.
		cut := max(over, logTail/4)
		for cut < len(l.buf) && l.buf[cut-1] != '\n' {
			cut++
		}
		l.dropped += cut
		l.buf = append(l.buf[:0], l.buf[cut:]...)
	}
	return len(p), nil
}

// logger returns a logger that writes to l, each line prefixed with the server's
// index.
func (l *logs) logger(server int) logr.Logger {
	return textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(logVerbosity), textlogger.Output(l))).
		WithValues("server", server)
}
