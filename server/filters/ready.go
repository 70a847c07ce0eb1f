package filters

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/server/request"
	"github.com/concordproject/concord/server/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ReadyGate holds writes until the server has been ready once. Make it with
// NewReadyGate; Filter is its stage of the chain.
type ReadyGate struct {
	ready  func(*http.Request) error
	exempt func(*http.Request) bool
	wait   time.Duration
	// opened latches the first time ready passes.
	opened atomic.Bool
}

// readyPoll is how often a held write asks again whether the server is ready.
const readyPoll = 20 * time.Millisecond

// NewReadyGate returns the gate: ready answers as /readyz does (nil when ready);
// exempt names the requests that pass while it is closed (the server's own writes, which
// make it ready); a held write waits at most wait, then gets 503 with Retry-After.
func NewReadyGate(ready func(*http.Request) error, exempt func(*http.Request) bool, wait time.Duration) *ReadyGate {
	return &ReadyGate{ready: ready, exempt: exempt, wait: wait}
}

// Opened reports whether the server has been ready once.
func (g *ReadyGate) Opened() bool { return g.opened.Load() }

// Filter is the "ready-for-writes" stage: until the server has been ready once, a
// write (any verb but get, list and watch, of a resource) waits for /readyz to pass,
// so that no write is accepted while /readyz still answers 500 after a (re)start.
// Reads and non-resource requests pass, as do exempt requests. Once open it stays
// open: a server that later fails readiness (etcd lost) reports it on /readyz and in
// the answers of its writes, not by holding them.
func (g *ReadyGate) Filter() Filter {
	return Filter{Name: "ready-for-writes", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if g.opened.Load() || !isWrite(r) || g.exempt(r) || g.await(r) {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Retry-After", strconv.Itoa(1))
			respond.Error(w, r, apierrors.NewServiceUnavailable("the server is starting: it does not accept writes until /readyz passes"))
		})
	}}
}

// await waits until the server is ready, up to g.wait or the request's end, and
// reports whether it is.
func (g *ReadyGate) await(r *http.Request) bool {
	ctx, cancel := context.WithTimeout(r.Context(), g.wait)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, readyPoll, true, func(context.Context) (bool, error) {
		if g.ready(r) != nil {
			return false, nil
		}
		g.opened.Store(true)
		return true, nil
	})
	return err == nil
}

// isWrite reports whether r is a resource request that is not a read.
func isWrite(r *http.Request) bool {
	info, ok := request.InfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		return false
	}
	switch info.Verb {
	case "get", "list", "watch":
		return false
	}
	return true
}
