package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	clientretry "k8s.io/client-go/util/retry"
)

// ErrGaveUp marks the error of a call whose every attempt failed with an error worth
// another: the policy's attempts are spent. It wraps the last attempt's error.
var ErrGaveUp = errors.New("gave up")

// Policy says how often and how long a call is tried.
type Policy struct {
	// Backoff spaces the attempts: Steps is how many are made in all (at least one),
	// Duration the first wait, growing by Factor up to Cap, with Jitter.
	Backoff wait.Backoff
	// Retriable says whether an attempt's error is worth another attempt; nil: none is.
	Retriable func(error) bool
	// AttemptTimeout, if positive, bounds each attempt.
	AttemptTimeout time.Duration
}

// Conflict is the policy of a read-modify-write that may meet a conflict or find the
// object created meanwhile: client-go's default (five attempts within about 100 ms).
var Conflict = Policy{Backoff: clientretry.DefaultRetry, Retriable: conflicting}

// StartUp is the policy of a start-up step that may race another server starting at
// the same time or find a server that does not serve yet: ten attempts over about
// ten seconds, of every error but a refusal.
var StartUp = Policy{
	Backoff:   wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 10, Cap: 2 * time.Second},
	Retriable: NotRefused,
}

func conflicting(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }

// Transient reports whether a request that failed with err may succeed if sent
// again: throttling, a server error or timeout, or no answer at all (a broken
// connection, the attempt's deadline). A server that cannot read a stored object
// keeps failing (StoreReadError); a conflict needs a new read, not the same request.
func Transient(err error) bool {
	if err == nil || apierrors.IsStoreReadError(err) {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError ||
			apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
	}
	return true
}

// NotRefused reports whether err is anything but a refusal of the request itself
// (invalid, forbidden, unauthorized, malformed, or of a method, media type or size
// the server does not take) or the caller's context ending: a start-up step retries
// every other error, a resource not served yet (404) among them.
func NotRefused(err error) bool {
	switch {
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsUnauthorized(err),
		apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsRequestEntityTooLargeError(err):
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// Do calls fn until it succeeds, fails with an error policy.Retriable refuses, or
// policy.Backoff.Steps attempts failed (the error then wraps ErrGaveUp and the last
// one), or ctx ends (its cause is returned). Between attempts it waits the backoff's
// next step, or as long as the server asked if that is longer.
func Do(ctx context.Context, policy Policy, fn func(context.Context) error) error {
	b := policy.Backoff
	attempts := max(1, b.Steps)
	for attempt := 1; ; attempt++ {
		err := try(ctx, policy.AttemptTimeout, fn)
		if err == nil || ctx.Err() != nil || policy.Retriable == nil || !policy.Retriable(err) {
			return err
		}
		if attempt >= attempts {
			return fmt.Errorf("%w after %d attempts: %w", ErrGaveUp, attempt, err)
		}
		delay := b.Step()
		if s, ok := apierrors.SuggestsClientDelay(err); ok {
			delay = max(delay, time.Duration(s)*time.Second)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// try makes one attempt, bounded by timeout if it is positive.
func try(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error {
	if timeout <= 0 {
		return fn(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fn(ctx)
}

// OnConflict is Do with the Conflict policy.
func OnConflict(ctx context.Context, fn func(context.Context) error) error {
	return Do(ctx, Conflict, fn)
}
