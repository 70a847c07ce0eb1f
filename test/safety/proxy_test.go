package safety

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// proxy forwards TCP connections from a loopback port to one of several etcd client
// URLs (the first that answers), and can cut the link: cut closes every open
// connection and refuses new ones until heal.
type proxy struct {
	l       net.Listener
	targets []string // host:port

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func newProxy(t *testing.T, targets []string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, conns: map[net.Conn]bool{}}
	for _, u := range targets {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		p.targets = append(p.targets, parsed.Host)
	}
	go p.serve()
	t.Cleanup(func() {
		_ = l.Close()
		p.setCut(true)
	})
	return p
}

func (p *proxy) url() string { return fmt.Sprintf("http://%s", p.l.Addr()) }

func (p *proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *proxy) forward(c net.Conn) {
	var up net.Conn
	for _, target := range p.targets {
		var err error
		if up, err = net.Dial("tcp", target); err == nil {
			break
		}
	}
	if up == nil || !p.track(c, up) {
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
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// track registers a connection pair, unless the link is cut.
func (p *proxy) track(c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c], p.conns[up] = true, true
	return true
}

// setCut cuts (true) or heals (false) the link.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
}
