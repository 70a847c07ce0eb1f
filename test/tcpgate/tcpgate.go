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
	ln net.Listener

	mu      sync.Mutex
	targets []string // host:port
	gen     int      // Retarget's count: a connection joins only the targets of its time
	cut     bool
	conns   map[net.Conn]struct{}
	joined  map[string]int // by target: connections joined to it
}

// New listens on a free loopback port and forwards to targets, each a host:port or a
// URL such as http://127.0.0.1:2379. The gate closes when the test ends.
func New(t testing.TB, targets ...string) *Gate {
	t.Helper()
	g := &Gate{conns: map[net.Conn]struct{}{}, joined: map[string]int{}}
	g.Retarget(t, targets...)
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

// Retarget forwards the connections accepted from now on to targets (as New takes
// them) instead: the gate's port now leads elsewhere. Connections already joined
// stay as they are.
func (g *Gate) Retarget(t testing.TB, targets ...string) {
	t.Helper()
	if len(targets) == 0 {
		t.Fatal("tcpgate: no target")
	}
	var hosts []string
	for _, target := range targets {
		if strings.Contains(target, "://") {
			u, err := url.Parse(target)
			if err != nil {
				t.Fatalf("tcpgate: target %q: %v", target, err)
			}
			target = u.Host
		}
		hosts = append(hosts, target)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.targets = hosts
	g.gen++
}

// Joined is how many connections the gate has joined to target (a host:port or a
// URL, as New takes it).
func (g *Gate) Joined(target string) int {
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		target = u.Host
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.joined[target]
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
	g.mu.Lock()
	targets, gen := g.targets, g.gen
	g.mu.Unlock()
	var up net.Conn
	var joined string
	for _, target := range targets {
		var err error
		if up, err = net.Dial("tcp", target); err == nil {
			joined = target
			break
		}
	}
	if up == nil || !g.track(c, up, joined, gen) {
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

// track registers a connection pair joined to target, unless the gate is cut or was
// retargeted since the pair's targets were read (generation gen).
func (g *Gate) track(c, up net.Conn, target string, gen int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cut || gen != g.gen {
		return false
	}
	g.conns[c], g.conns[up] = struct{}{}, struct{}{}
	g.joined[target]++
	return true
}
