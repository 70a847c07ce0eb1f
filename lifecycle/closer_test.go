package lifecycle_test

import (
	"testing"

	"github.com/concordproject/concord/lifecycle"
)

// A Closer releases what it holds when the group stops it, not before.
func TestCloser(t *testing.T) {
	var g lifecycle.Group
	released := make(chan struct{})
	if err := g.Start(t.Context(), lifecycle.Closer("held", func() { close(released) })); err != nil {
		t.Fatal(err)
	}
	select {
	case <-released:
		t.Fatal("released before the group stopped")
	default:
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-released:
	default:
		t.Fatal("not released once the group stopped")
	}
}
