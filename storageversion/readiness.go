package storageversion

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/concordproject/concord/health"
)

// WritesCheck is the name of the readyz check Manager.WritesCheck returns.
const WritesCheck = "storage-version-writes"

// ErrWritesRefused means the server refuses the writes of resources it serves.
var ErrWritesRefused = errors.New("writes are refused")

// WritesCheck returns the readyz check WritesCheck: it fails, naming why, while the
// barrier refuses the writes of a resource the server serves: its identity lease
// lapsed, the gate of a built-in resource is closed (its entry is being written, or was
// removed or changed by someone else), or the registration of a custom resource failed.
// A custom resource whose storage version is changing does not count: its writes wait
// for the change rather than being refused. It belongs to /readyz only: a restart
// would not help.
func (m *Manager) WritesCheck() health.Checker {
	return health.NamedCheck(WritesCheck, func(*http.Request) error { return m.refusing(time.Now()) })
}

// refusing reports which writes the barrier refuses at now, if any.
func (m *Manager) refusing(now time.Time) error {
	if m.cfg.LeaseValid != nil && !m.cfg.LeaseValid(now) {
		return fmt.Errorf("%w: %w", ErrWritesRefused, ErrLeaseLapsed)
	}
	m.mu.RLock()
	var closed []string
	for gr, t := range m.tracked {
		open, reason := t.gate.state()
		if !open && (!t.custom || reason != nil) {
			why := "registering its storage version"
			if reason != nil {
				why = reason.Error()
			}
			closed = append(closed, fmt.Sprintf("%s (%s)", gr, why))
		}
	}
	m.mu.RUnlock()
	if len(closed) == 0 {
		return nil
	}
	slices.Sort(closed)
	return fmt.Errorf("%w for %s", ErrWritesRefused, strings.Join(closed, ", "))
}
