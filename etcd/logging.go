package etcd

import (
	"strings"

	"go.uber.org/zap/zapcore"
)

// startupNoise wraps etcd's log core to lower to Info the one error a new member
// always logs while it starts: its storage version monitor runs before the member has
// written its first raft term ("failed to update storage version": "cannot detect
// storage schema version: missing term information") and succeeds on its next round.
// At the default level (error) it is not shown; the same message with any other error
// is logged as etcd logs it, and everything else passes unchanged.
type startupNoise struct{ zapcore.Core }

// monitorFailure is the message of etcd's storage version monitor when it fails.
const monitorFailure = "failed to update storage version"

func (c startupNoise) With(fields []zapcore.Field) zapcore.Core {
	return startupNoise{c.Core.With(fields)}
}

func (c startupNoise) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Message == monitorFailure || c.Enabled(e.Level) {
		return ce.AddCore(e, c) // the monitor's failure is decided by its error, in Write
	}
	return ce
}

func (c startupNoise) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Message == monitorFailure && benign(fields) {
		if !c.Enabled(zapcore.InfoLevel) {
			return nil
		}
		e.Level, e.Stack = zapcore.InfoLevel, ""
	}
	if !c.Enabled(e.Level) {
		return nil
	}
	return c.Core.Write(e, fields)
}

// benign reports whether the monitor failed only for want of the first raft term.
func benign(fields []zapcore.Field) bool {
	for _, f := range fields {
		if err, ok := f.Interface.(error); ok && f.Key == "error" {
			return strings.Contains(err.Error(), "missing term information")
		}
	}
	return false
}
