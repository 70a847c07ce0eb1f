package etcd

import (
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The monitor's failure for want of the first raft term is lowered to Info (hidden at
// etcd's default level); the same message with another error, and other errors, stay.
func TestStartupNoise(t *testing.T) {
	for _, tc := range []struct {
		level  zapcore.Level
		logged int
	}{{zapcore.ErrorLevel, 2}, {zapcore.InfoLevel, 4}} {
		core, logs := observer.New(tc.level)
		l := zap.New(startupNoise{core})
		l.Error(monitorFailure, zap.Error(errors.New("cannot detect storage schema version: missing term information")))
		l.Error(monitorFailure, zap.Error(errors.New("disk full")))
		l.Error("failed to serve", zap.Error(errors.New("boom")))
		l.Info("hello")
		if logs.Len() != tc.logged {
			t.Fatalf("at %s: %d entries, want %d: %v", tc.level, logs.Len(), tc.logged, logs.All())
		}
		for _, e := range logs.All() {
			if e.Message == monitorFailure && e.Level == zapcore.ErrorLevel && e.ContextMap()["error"] != "disk full" {
				t.Errorf("at %s: the benign failure logged as an error", tc.level)
			}
		}
	}
}
