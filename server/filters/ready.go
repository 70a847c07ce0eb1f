package filters

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ReadyGate holds writes until the server has been ready once. Make it with
// NewReadyGate, run Run as a component of the server, and put Filter in the chain.
type ReadyGate struct {
	ready  func(context.Context) error
	exempt func(*http.Request) bool
	wait   time.Duration
	opened chan struct{}
	once   sync.Once
}

// readyPoll is how often Run asks whether the server is ready.
const readyPoll = 20 * time.Millisecond

// NewReadyGate returns the gate: ready answers whether the server is ready (nil when it
// is); exempt names the requests that pass while it is closed (the server's own writes,
// which make it ready); a held write waits at most wait, then gets 503 with Retry-After.
func NewReadyGate(ready func(context.Context) error, exempt func(*http.Request) bool, wait time.Duration) *ReadyGate {
	return &ReadyGate{ready: ready, exempt: exempt, wait: wait, opened: make(chan struct{})}
}

// startWait bounds how long a write waits for a starting server to be ready before
// it gets 503 with Retry-After.
const startWait = 10 * time.Second

// NewStartGate returns the gate that holds clients' writes until the server has
// started: every post-start hook of checks done, but those named in answered (hooks
// whose own filters answer the writes they hold), and the in-process informers
// synced (the check informers.SyncCheck). Ongoing conditions that /readyz also
// reports (etcd, the storage-migration definitions, KMS plugins) do not hold writes.
// The server's own requests (its loopback identity) pass: its start-up writes make it
// ready. A held write waits startWait at most.
func NewStartGate(checks *health.Endpoints, answered ...string) *ReadyGate {
	started := func(c health.Checker) bool {
		_, hook := c.(*health.PostStartHook)
		return hook && !slices.Contains(answered, c.Name()) || c.Name() == informers.SyncCheck
	}
	return NewReadyGate(func(ctx context.Context) error { return checks.Ready(ctx, started) }, ownRequest, startWait)
}

// ownRequest reports whether r is the server's own (its loopback identity).
func ownRequest(r *http.Request) bool {
	u, _ := auth.UserFrom(r.Context())
	return u.Name == auth.LoopbackUser
}

// Run opens the gate the first time the server is ready, then waits for ctx to end.
func (g *ReadyGate) Run(ctx context.Context) error {
	err := wait.PollUntilContextCancel(ctx, readyPoll, true, func(ctx context.Context) (bool, error) {
		return g.ready(ctx) == nil, nil
	})
	if err == nil {
		g.once.Do(func() { close(g.opened) })
	}
	<-ctx.Done()
	return nil
}

// Opened reports whether the server has been ready once.
func (g *ReadyGate) Opened() bool {
	select {
	case <-g.opened:
		return true
	default:
		return false
	}
}

// Filter is the "ready-for-writes" stage: until the server has been ready once, a
// write (any verb but get, list and watch, of a resource) waits for it, so that no
// write is accepted while /readyz still fails after a (re)start. Reads, non-resource
// requests and exempt requests pass. Once open it stays open: a server that later
// fails readiness (etcd lost) reports it on /readyz and in its answers, not by holding
// writes.
func (g *ReadyGate) Filter() Filter {
	return Filter{Name: "ready-for-writes", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if g.Opened() || !isWrite(r) || g.exempt(r) || g.await(r.Context()) {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Retry-After", strconv.Itoa(1))
			respond.Error(w, r, apierrors.NewServiceUnavailable("the server is starting: it does not accept writes until /readyz passes"))
		})
	}}
}

// await waits until the gate opens, up to g.wait or the request's end, and reports
// whether it did.
func (g *ReadyGate) await(ctx context.Context) bool {
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	select {
	case <-g.opened:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
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
