package trigger_test

import (
	"testing"
	"time"

	"github.com/concordproject/concord/migration/trigger"
)

func TestHeartbeatInterval(t *testing.T) {
	for _, c := range []struct {
		poll, staleness, want time.Duration
	}{
		{time.Minute, 10 * time.Minute, 150 * time.Second},      // the defaults
		{200 * time.Millisecond, time.Minute, 15 * time.Second}, // a test's fast controllers
		{5 * time.Minute, 10 * time.Minute, 5 * time.Minute},    // a poll longer than a quarter window
	} {
		if got := trigger.HeartbeatInterval(c.poll, c.staleness); got != c.want {
			t.Errorf("HeartbeatInterval(%v, %v) = %v, want %v", c.poll, c.staleness, got, c.want)
		}
	}
}
