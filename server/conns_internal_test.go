package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Go's Shutdown leaves an HTTP/2 connection that is idle at the GOAWAY to its client,
// for a second; with idleConns the server hangs it up at once. The bound of the
// shutdown below is shorter than Go's second, so that without the drain it fails.
func TestShutdownClosesIdleHTTP2Connections(t *testing.T) {
	for _, drain := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		srv.EnableHTTP2 = true
		conns := newIdleConns()
		srv.Config.ConnState = conns.track
		srv.StartTLS()
		client := srv.Client()
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Fatalf("answered over %s, want HTTP/2", resp.Proto)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 900*time.Millisecond)
		shutdown := make(chan error, 1)
		go func() { shutdown <- srv.Config.Shutdown(ctx) }()
		if drain {
			conns.drain()
		}
		err = <-shutdown
		cancel()
		srv.Close()
		switch {
		case drain && err != nil:
			t.Fatalf("with the drain, shutdown: %v", err)
		case !drain && err == nil:
			// Go's behaviour changed: the drain may no longer be needed.
			t.Log("without the drain, Go's shutdown closed the idle HTTP/2 connection itself")
		}
	}
}

// closeCounter is a connection that counts its closes.
type closeCounter struct {
	net.Conn
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// Draining closes the idle connections, then each as it becomes idle; never an
// active one.
func TestIdleConnsClosesIdleOnesWhenDraining(t *testing.T) {
	ic := newIdleConns()
	idle, active := &closeCounter{}, &closeCounter{}
	for _, st := range []http.ConnState{http.StateNew, http.StateActive, http.StateIdle} {
		ic.track(idle, st)
	}
	ic.track(active, http.StateNew)
	ic.track(active, http.StateActive)
	ic.drain()
	if idle.closed != 1 || active.closed != 0 {
		t.Fatalf("after the drain: idle closed %d times, active %d; want 1 and 0", idle.closed, active.closed)
	}
	ic.track(active, http.StateIdle)
	if active.closed != 1 {
		t.Fatalf("a connection that became idle while draining was closed %d times, want 1", active.closed)
	}
	ic.track(idle, http.StateClosed)
	ic.track(active, http.StateClosed)
	if len(ic.idle) != 0 {
		t.Fatalf("closed connections still followed: %v", ic.idle)
	}
}
