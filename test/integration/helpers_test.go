package integration

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"testing"
	"time"
)

// waitFor polls cond every 50 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func errorsAs(err error, target *apierrors.APIStatus) bool { return errors.As(err, target) }
