package health

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// Sentinel errors, tested with errors.Is.
var (
	// ErrNotFinished: a PostStartHook has not reported Done. When the hook recorded a
	// reason with Fail, the check's error wraps both ErrNotFinished and that reason.
	ErrNotFinished = errors.New("not finished")
	// ErrShuttingDown: ShuttingDown was called; the "shutdown" readiness check fails
	// with it.
	ErrShuttingDown = errors.New("process is shutting down")
	// ErrDuplicateCheck: a check with the same name is already on the endpoint's list
	// (or appears twice in one Add call).
	ErrDuplicateCheck = errors.New("duplicate health check name")
	// ErrInvalidCheck: a nil Checker, or a name that cannot be addressed as
	// /<endpoint>/<name>: it must be one or more "/"-separated segments, each starting
	// with a letter or digit and made of letters, digits, '.', '_', ':' and '-'.
	ErrInvalidCheck = errors.New("invalid health check")
)

// PostStartHookPrefix starts the name of every PostStartHook's check, as in
// kube-apiserver: hook "bootstrap" is the check "poststarthook/bootstrap".
const PostStartHookPrefix = "poststarthook/"

// ShutdownCheckName names the readiness check that every Endpoints carries and that
// fails once ShuttingDown is called.
const ShutdownCheckName = "shutdown"

// Checker is one named health check.
type Checker interface {
	// Name identifies the check in responses, in ?exclude, in the per-check path and
	// in metric labels. It must not change.
	Name() string
	// Check returns nil when healthy, otherwise an error saying why. r is the probe
	// request; Check should respect r.Context() if it blocks. Check may be called
	// concurrently from several requests.
	Check(r *http.Request) error
}

// funcCheck is a Checker backed by a function.
type funcCheck struct {
	name string
	fn   func(*http.Request) error
}

// NamedCheck returns a Checker called name that runs fn on every evaluation. It
// panics if fn is nil.
func NamedCheck(name string, fn func(r *http.Request) error) Checker {
	if fn == nil {
		panic(fmt.Sprintf("health: NamedCheck(%q) with a nil function", name))
	}
	return funcCheck{name: name, fn: fn}
}

func (c funcCheck) Name() string                { return c.name }
func (c funcCheck) Check(r *http.Request) error { return c.fn(r) }

// Ping returns a check named "ping" that always passes: it shows the server can
// route a request to this package at all.
func Ping() Checker {
	return NamedCheck("ping", func(*http.Request) error { return nil })
}

// PostStartHook tracks one task a server runs after it starts serving (bootstrap
// objects, a first cache fill...). Its check, named PostStartHookPrefix+name, fails
// with ErrNotFinished until Done is called, and passes forever after. A PostStartHook
// is safe for concurrent use; the zero value is not usable, call NewPostStartHook.
type PostStartHook struct {
	name string

	mu     sync.Mutex
	done   bool
	reason error
}

// NewPostStartHook returns an unfinished hook called name (without the prefix).
func NewPostStartHook(name string) *PostStartHook {
	return &PostStartHook{name: name}
}

// Name returns "poststarthook/" followed by the hook's name.
func (h *PostStartHook) Name() string { return PostStartHookPrefix + h.name }

// Done marks the hook finished: its check passes from now on and any reason recorded
// by Fail is dropped. Calling Done again has no effect.
func (h *PostStartHook) Done() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	h.reason = nil
}

// Fail records why the hook has not finished (for example the last error of a retry
// loop). The reason appears in the log and in the per-check response, never in the
// aggregate body. Fail(nil) clears it. Fail after Done has no effect: a finished hook
// stays finished.
func (h *PostStartHook) Fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.done {
		h.reason = err
	}
}

// Check returns nil once Done was called; before that, ErrNotFinished, wrapped
// together with the reason given to Fail if there is one.
func (h *PostStartHook) Check(*http.Request) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.done:
		return nil
	case h.reason != nil:
		return fmt.Errorf("%w: %w", ErrNotFinished, h.reason)
	default:
		return ErrNotFinished
	}
}
