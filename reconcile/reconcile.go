package reconcile

import (
	"context"
	"errors"
	"time"
)

// Result says when to look at a key again after a successful reconcile.
type Result struct {
	// RequeueAfter, if positive, reconciles the key again after this long (a timer the
	// world will not signal, such as an expiry).
	RequeueAfter time.Duration
}

// Reconciler brings the world in line with one key. It must be idempotent and safe
// for concurrent calls with different keys.
type Reconciler[K comparable] interface {
	Reconcile(ctx context.Context, key K) (Result, error)
}

// Func is a Reconciler made of a function.
type Func[K comparable] func(ctx context.Context, key K) (Result, error)

// Reconcile calls f.
func (f Func[K]) Reconcile(ctx context.Context, key K) (Result, error) { return f(ctx, key) }

// ErrTerminal marks errors that retrying cannot fix: the key is dropped until
// something adds it again. Wrap errors with TerminalError.
var ErrTerminal = errors.New("terminal error")

// terminalError wraps an error as terminal, keeping it in the chain.
type terminalError struct{ err error }

func (e terminalError) Error() string   { return e.err.Error() }
func (e terminalError) Unwrap() []error { return []error{e.err, ErrTerminal} }

// TerminalError marks err as one that retrying cannot fix (nil stays nil).
func TerminalError(err error) error {
	if err == nil {
		return nil
	}
	return terminalError{err}
}
