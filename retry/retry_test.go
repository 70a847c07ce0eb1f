package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/concordproject/concord/retry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

var quick = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 4}

var configMaps = schema.GroupResource{Resource: "configmaps"}

func TestDo(t *testing.T) {
	conflict := apierrors.NewConflict(configMaps, "x", errors.New("changed"))
	invalid := apierrors.NewBadRequest("no")
	unavailable := apierrors.NewServiceUnavailable("starting")
	cases := []struct {
		name     string
		policy   retry.Policy
		errs     []error // what the attempts return, in turn; then nil
		attempts int
		want     func(error) bool
	}{
		{"succeeds after conflicts", retry.Policy{Backoff: quick, Retriable: apierrors.IsConflict}, []error{conflict, conflict}, 3, isNil},
		{"a refusal is returned at once", retry.Policy{Backoff: quick, Retriable: retry.NotRefused}, []error{invalid, conflict}, 1, apierrors.IsBadRequest},
		{"gives up after the steps", retry.Policy{Backoff: quick, Retriable: retry.Transient}, []error{unavailable, unavailable, unavailable, unavailable, unavailable}, 4,
			func(err error) bool { return errors.Is(err, retry.ErrGaveUp) && apierrors.IsServiceUnavailable(err) }},
		{"no Retriable: one attempt", retry.Policy{Backoff: quick}, []error{unavailable}, 1, apierrors.IsServiceUnavailable},
		{"a conflict is not transient", retry.Policy{Backoff: quick, Retriable: retry.Transient}, []error{conflict}, 1, apierrors.IsConflict},
		{"a broken connection is", retry.Policy{Backoff: quick, Retriable: retry.Transient}, []error{errors.New("connection reset")}, 2, isNil},
		{"a server error is", retry.Policy{Backoff: quick, Retriable: retry.Transient}, []error{apierrors.NewInternalError(errors.New("x"))}, 2, isNil},
		{"a stored object the server cannot read is not", retry.Policy{Backoff: quick, Retriable: retry.Transient}, []error{storeRead}, 1, apierrors.IsStoreReadError},
		{"the conflict policy", retry.Conflict, []error{conflict, apierrors.NewAlreadyExists(configMaps, "x")}, 3, isNil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := retry.Do(t.Context(), tc.policy, func(context.Context) error {
				n++
				if n <= len(tc.errs) {
					return tc.errs[n-1]
				}
				return nil
			})
			if n != tc.attempts || !tc.want(err) {
				t.Fatalf("%d attempts, error %v; want %d attempts", n, err, tc.attempts)
			}
		})
	}
}

func isNil(err error) bool { return err == nil }

var storeRead = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonStoreReadError}}

// A wait the server asks for (Retry-After) is waited, and the caller's context ends
// it: the call returns the context's cause without a second attempt.
func TestDoWaitsWhatTheServerAsksUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	n := 0
	err := retry.Do(ctx, retry.Policy{Backoff: quick, Retriable: retry.Transient}, func(context.Context) error {
		n++
		return apierrors.NewTooManyRequests("busy", 600) // then the call waits 600 s, or the context
	})
	if n != 1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%d attempts, error %v; want 1 and the context's cause", n, err)
	}
}

// Each attempt gets its own deadline when the policy says so, and an attempt cut by
// it is tried again while the caller's context lives.
func TestDoBoundsEachAttempt(t *testing.T) {
	n := 0
	err := retry.Do(t.Context(), retry.Policy{Backoff: quick, Retriable: retry.Transient, AttemptTimeout: time.Millisecond}, func(ctx context.Context) error {
		n++
		if _, ok := ctx.Deadline(); !ok {
			t.Fatal("an attempt without a deadline")
		}
		if n == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	if n != 2 || err != nil {
		t.Fatalf("%d attempts, error %v; want 2 and none", n, err)
	}
}
