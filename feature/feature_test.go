package feature_test

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// named is a feature a server runs, or does not (nil).
type named struct{ name string }

func (n *named) Checks() []health.Checker {
	return []health.Checker{health.NamedCheck(n.name, func(*http.Request) error { return nil })}
}
func (n *named) Start(context.Context, *lifecycle.Group) error { return nil }

// Present keeps the features a server has, in order: a nil pointer or a nil Func is
// a feature it does not run.
func TestPresent(t *testing.T) {
	var absent *named
	var noFunc feature.Func
	got := feature.Present(&named{"a"}, absent, noFunc, feature.ChecksOnly{health.Ping()}, nil, &named{"b"})
	var names []string
	for _, f := range got {
		for _, c := range f.Checks() {
			names = append(names, c.Name())
		}
	}
	if want := []string{"a", "ping", "b"}; !slices.Equal(names, want) {
		t.Fatalf("Present's checks: %v, want %v", names, want)
	}
}

// Component starts its one component in the group, with no checks of its own.
func TestComponent(t *testing.T) {
	var g lifecycle.Group
	started := make(chan struct{})
	f := feature.Component(lifecycle.Component{Name: "c", Run: func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return nil
	}})
	if err := f.Start(t.Context(), &g); err != nil || len(f.Checks()) != 0 {
		t.Fatalf("Start: %v, checks %v", err, f.Checks())
	}
	<-started
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
}

// LoopbackConfig gives each caller a copy of its own (none without a configuration).
func TestLoopbackConfig(t *testing.T) {
	srv := feature.Server{Loopback: &rest.Config{Host: "https://127.0.0.1:6443"}}
	mine := srv.LoopbackConfig()
	mine.Host = "changed"
	if srv.Loopback.Host != "https://127.0.0.1:6443" || srv.LoopbackConfig().Host != "https://127.0.0.1:6443" {
		t.Fatalf("a change to a copy changed the server's: %s", srv.Loopback.Host)
	}
	if (feature.Server{}).LoopbackConfig() != nil {
		t.Fatal("a copy of no configuration")
	}
}

// A client made from a copy of the loopback configuration leaves an idle HTTP/2
// connection; CloseIdleLoopback hangs it up, so the server sees it close (and would
// not wait on it at shutdown).
func TestCloseIdleLoopback(t *testing.T) {
	closed := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("the request came over HTTP/%d", r.ProtoMajor)
		}
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	s := feature.Server{Loopback: &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}}
	hc, err := rest.HTTPClientFor(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	select {
	case <-closed:
		t.Fatal("the connection closed before CloseIdleLoopback")
	default:
	}
	// The HTTP/2 client forgets the request's stream in a goroutine of its own after
	// the body is read and closed: a connection still counting it is not idle yet, so
	// CloseIdleLoopback is called again until the connection is seen to close.
	err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		s.CloseIdleLoopback()
		select {
		case <-closed:
			return true, nil
		default:
			return false, nil
		}
	})
	if err != nil {
		t.Fatal("the idle connection was still open 30 s after CloseIdleLoopback")
	}
	(feature.Server{}).CloseIdleLoopback() // none: nothing to close
}
