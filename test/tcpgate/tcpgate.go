package tcpgate

import (
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Gate forwards each connection accepted on its port to the first of its targets
// that answers.
type Gate struct {
	ln      net.Listener
	targets []string // host:port

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// New listens on a free loopback port and forwards to targets, each a host:port or a
// URL such as http://127.0.0.1:2379. The gate closes when the test ends.
func New(t testing.TB, targets ...string) *Gate {
	t.Helper()
	if len(targets) == 0 {
		t.Fatal("tcpgate: no target")
	}
	g := &Gate{conns: map[net.Conn]struct{}{}}
	for _, target := range targets {
		if strings.Contains(target, "://") {
			u, err := url.Parse(target)
			if err != nil {
				t.Fatalf("tcpgate: target %q: %v", target, err)
			}
			target = u.Host
		}
		g.targets = append(g.targets, target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.ln = ln
	t.Cleanup(func() {
		_ = ln.Close()
		g.Cut()
	})
	go g.serve()
	return g
}

// Addr is the gate's host:port.
func (g *Gate) Addr() string { return g.ln.Addr().String() }

// URL is the gate's address as an etcd client URL.
func (g *Gate) URL() string { return "http://" + g.Addr() }

// Cut closes every connection the gate carries and refuses new ones until Heal.
func (g *Gate) Cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = true
	for c := range g.conns {
		_ = c.Close()
	}
	clear(g.conns)
}

// Heal lets new connections through again; the ones Cut closed stay closed.
func (g *Gate) Heal() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = false
}

func (g *Gate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		go g.forward(c)
	}
}

// forward joins c to the first target that answers, unless the gate is cut.
func (g *Gate) forward(c net.Conn) {
	var up net.Conn
	for _, target := range g.targets {
		var err error
		if up, err = net.Dial("tcp", target); err == nil {
			break
		}
	}
	if up == nil || !g.track(c, up) {
		_ = c.Close()
		if up != nil {
			_ = up.Close()
		}
		return
	}
	go func() {
		_, _ = io.Copy(up, c)
		_ = up.Close()
	}()
	_, _ = io.Copy(c, up)
	_ = c.Close()
	_ = up.Close()
	g.mu.Lock()
	delete(g.conns, c)
	delete(g.conns, up)
	g.mu.Unlock()
}

// track registers a connection pair, unless the gate is cut.
func (g *Gate) track(c, up net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cut {
		return false
	}
	g.conns[c], g.conns[up] = struct{}{}, struct{}{}
	return true
}
