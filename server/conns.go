package server

import (
	"net"
	"net/http"
	"sync"
)

// idleConns follows the states of a server's connections (http.Server.ConnState) so
// that its shutdown can close the idle ones at once. Go's Shutdown closes idle
// HTTP/1.1 connections itself, but an HTTP/2 connection it leaves to its client after
// the GOAWAY, and Go's HTTP/2 client does not hang up a connection that was idle when
// the GOAWAY came: the server waits a second for each before closing it. A connection
// idle now has no request in flight, so closing it loses nothing (Shutdown takes the
// same view of idle HTTP/1.1 connections).
type idleConns struct {
	mu       sync.Mutex
	idle     map[net.Conn]bool
	draining bool
}

func newIdleConns() *idleConns { return &idleConns{idle: map[net.Conn]bool{}} }

// track is the http.Server's ConnState hook. Once draining, a connection that
// becomes idle is closed.
func (ic *idleConns) track(c net.Conn, st http.ConnState) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	switch st {
	case http.StateNew, http.StateActive:
		ic.idle[c] = false
	case http.StateIdle:
		if ic.draining {
			_ = c.Close()
			return
		}
		ic.idle[c] = true
	default: // closed, hijacked
		delete(ic.idle, c)
	}
}

// drain closes the connections idle now, and from now on each as it becomes idle.
func (ic *idleConns) drain() {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	ic.draining = true
	for c, idle := range ic.idle {
		if idle {
			_ = c.Close()
		}
	}
}
