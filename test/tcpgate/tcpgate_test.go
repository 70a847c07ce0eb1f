package tcpgate

import (
	"bufio"
	"net"
	"testing"
)

// echo serves one line back per connection until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					_, _ = c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through the gate and returns what came back, or the error.
func roundTrip(g *Gate) (string, error) {
	c, err := net.Dial("tcp", g.Addr())
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestGateForwardsCutsAndHeals(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	_ = dead.Close()
	g := New(t, deadAddr, "http://"+echo(t)) // the first target refuses; the second answers
	if got, err := roundTrip(g); err != nil || got != "ping\n" {
		t.Fatalf("open gate: got %q, %v; want the line back", got, err)
	}

	held, err := net.Dial("tcp", g.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Close() }()
	if _, err := held.Write([]byte("partial")); err != nil { // no newline: the echo waits
		t.Fatal(err)
	}
	g.Cut()
	if _, err := bufio.NewReader(held).ReadString('\n'); err == nil {
		t.Error("a connection open across Cut still carried data")
	}
	if got, err := roundTrip(g); err == nil {
		t.Errorf("cut gate: a new connection got %q back", got)
	}

	g.Heal()
	if got, err := roundTrip(g); err != nil || got != "ping\n" {
		t.Fatalf("healed gate: got %q, %v; want the line back", got, err)
	}
}

func TestGateRetargets(t *testing.T) {
	first, second := echo(t), "http://"+echo(t)
	g := New(t, first)
	if got, err := roundTrip(g); err != nil || got != "ping\n" {
		t.Fatalf("got %q, %v; want the line back", got, err)
	}
	g.Retarget(t, second)
	if got, err := roundTrip(g); err != nil || got != "ping\n" {
		t.Fatalf("retargeted: got %q, %v; want the line back", got, err)
	}
	if a, b := g.Joined(first), g.Joined(second); a != 1 || b != 1 {
		t.Errorf("joined %d to the first target and %d to the second, want 1 and 1", a, b)
	}
}
