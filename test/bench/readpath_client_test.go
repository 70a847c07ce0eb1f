package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// connStats counts the connections a client dials and the reads and writes on them
// (each a system call: a read returns at most what has arrived).
type connStats struct {
	conns, reads, readBytes, writes, writeBytes atomic.Int64
}

// dial is a rest.Config Dial: client-go's default dialer, counted.
func (s *connStats) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	s.conns.Add(1)
	return &countedConn{Conn: c, s: s}, nil
}

// connCounts is a reading of connStats.
type connCounts struct{ conns, reads, readBytes, writes, writeBytes int64 }

func (s *connStats) counts() connCounts {
	return connCounts{conns: s.conns.Load(), reads: s.reads.Load(), readBytes: s.readBytes.Load(),
		writes: s.writes.Load(), writeBytes: s.writeBytes.Load()}
}

func (c connCounts) minus(o connCounts) connCounts {
	return connCounts{conns: c.conns - o.conns, reads: c.reads - o.reads, readBytes: c.readBytes - o.readBytes,
		writes: c.writes - o.writes, writeBytes: c.writeBytes - o.writeBytes}
}

type countedConn struct {
	net.Conn
	s *connStats
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.s.reads.Add(1)
		c.s.readBytes.Add(int64(n))
	}
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.s.writes.Add(1)
	c.s.writeBytes.Add(int64(n))
	return n, err
}

// answers records, for each kind of ConfigMap request (create, get, list, watch),
// what the client asked for and what the first answer was.
type answers struct {
	mu   sync.Mutex
	seen map[string]string
}

// wrap is a rest.Config WrapTransport.
func (a *answers) wrap(rt http.RoundTripper) http.RoundTripper { return answerRecorder{rt, a} }

type answerRecorder struct {
	http.RoundTripper
	a *answers
}

func (r answerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.RoundTripper.RoundTrip(req)
	if err == nil {
		if kind := requestKind(req); kind != "" {
			r.a.record(kind, req, resp)
		}
	}
	return resp, err
}

// requestKind names the kind of a request of ConfigMaps, or returns "".
func requestKind(req *http.Request) string {
	path := req.URL.Path
	switch {
	case !strings.Contains(path, "/configmaps"):
		return ""
	case req.Method == http.MethodPost:
		return "create"
	case req.Method != http.MethodGet:
		return ""
	case req.URL.Query().Get("watch") == "true":
		return "watch"
	case strings.HasSuffix(path, "/configmaps"):
		return "list"
	}
	return "get"
}

func (a *answers) record(kind string, req *http.Request, resp *http.Response) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.seen[kind]; ok {
		return
	}
	if a.seen == nil {
		a.seen = map[string]string{}
	}
	s := fmt.Sprintf("%s over %s (Accept: %s)", resp.Header.Get("Content-Type"), resp.Proto, req.Header.Get("Accept"))
	if resp.Uncompressed {
		s += ", gzip"
	}
	a.seen[kind] = s
}

func (a *answers) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for _, kind := range []string{"create", "get", "list", "watch"} {
		if s, ok := a.seen[kind]; ok {
			parts = append(parts, kind+": "+s)
		}
	}
	if len(parts) == 0 {
		return "nothing yet"
	}
	return strings.Join(parts, "; ")
}
