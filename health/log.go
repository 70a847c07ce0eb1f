package health

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ErrLoggingBlocked means the "log" check's last flush of the logs did not complete
// within the limit.
var ErrLoggingBlocked = errors.New("logging blocked")

// Defaults of a Log check, kube-apiserver's: a flush every minute, blocked once none
// completed for two.
const (
	DefaultLogFlushPeriod = time.Minute
	DefaultLogLimit       = 2 * time.Minute
)

// Log is kube-apiserver's "log" check: Run flushes the logs every period, and the
// check fails with ErrLoggingBlocked once no flush has completed for limit (a log
// sink that blocks, such as a full pipe, would block the server's request logging
// too). Create it with NewLog. k8s.io/apiserver's healthz.LogHealthz does the same
// job, but it is one process-wide value whose flush loop starts at the first check
// and never stops (wait.Forever): several servers in one process (the test harness)
// would share it and leak it. This one runs in Concord's component lifecycle, stops
// with its server, and takes the flush and the clock as arguments so that a blocked
// sink can be tested.
type Log struct {
	flush         func()
	period, limit time.Duration
	now           func() time.Time

	mu   sync.Mutex
	last time.Time // when the last flush completed (or Run started)
}

// NewLog returns the "log" check over flush (klog.Flush in a server), with the
// default period and limit when zero.
func NewLog(flush func(), period, limit time.Duration) *Log {
	if period <= 0 {
		period = DefaultLogFlushPeriod
	}
	if limit <= 0 {
		limit = DefaultLogLimit
	}
	return &Log{flush: flush, period: period, limit: limit, now: time.Now}
}

// Name returns "log".
func (l *Log) Name() string { return "log" }

// Check passes while a flush completed within the limit; before Run starts it
// passes, as kube-apiserver's does before its first flush.
func (l *Log) Check(*http.Request) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		return nil
	}
	if since := l.now().Sub(l.last); since >= l.limit {
		return fmt.Errorf("%w: the last flush completed %s ago", ErrLoggingBlocked, since.Round(time.Second))
	}
	return nil
}

// Run flushes the logs every period until ctx is done. A flush that blocks holds
// the next one back (and so the check fails once the limit passes), never the check
// itself, nor Run's return once ctx is done.
func (l *Log) Run(ctx context.Context) error {
	l.completed()
	// A timer, not a retry: the logs are flushed every period.
	t := time.NewTicker(l.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		flushed := make(chan struct{})
		go func() {
			defer close(flushed)
			l.flush()
		}()
		select {
		case <-ctx.Done():
			return nil
		case <-flushed:
			l.completed()
		}
	}
}

func (l *Log) completed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = l.now()
}
