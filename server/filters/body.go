package filters

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// BodyLimits bound the request bodies the request-body stage reads.
type BodyLimits struct {
	// MaxBytes caps a body: a declared length over it is a 413 at once, and a body
	// that grows past it while read is a 413 too.
	MaxBytes int64
	// PerUser caps the requests of one authenticated user whose bodies are still
	// arriving; the next is answered 429 at once (0: no cap).
	PerUser int
}

// RequestBody reads each request's whole body before the request goes on, so that
// nothing after it (priority and fairness' seats above all) is held by a client that
// sends its body slowly or never. The read is bounded three ways: by the size limit
// (413 RequestEntityTooLarge), by the request's deadline, which the timeout stage
// sets (a body not complete by then is answered 504 Timeout and the connection's read
// released), and by the number of one user's requests whose bodies are still arriving
// (429 TooManyRequests beyond limits.PerUser). The handlers then read the body from
// memory. Requests without a body pass straight through.
func RequestBody(limits BodyLimits) Filter {
	readers := &bodyReaders{perUser: limits.PerUser, active: map[string]int{}}
	return Filter{Name: "request-body", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
				next.ServeHTTP(w, r)
				return
			}
			if r.ContentLength > limits.MaxBytes {
				refuse(w, r, tooLarge(limits.MaxBytes))
				return
			}
			var user string
			if u, ok := auth.UserFrom(r.Context()); ok {
				user = u.Name
			}
			if !readers.acquire(user) {
				refuse(w, r, apierrors.NewTooManyRequests(fmt.Sprintf(
					"too many requests of this user are still sending their bodies (at most %d at once)", limits.PerUser), 1))
				return
			}
			data, err := readAll(w, r, limits.MaxBytes)
			readers.release(user)
			if err != nil {
				respond.Error(w, r, err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(data))
			r.ContentLength = int64(len(data))
			next.ServeHTTP(w, r)
		})
	}}
}

// refuse answers err to a request whose body it leaves unread. The connection's read
// deadline is set to now first: net/http reads what is left of a small unread body
// before it sends the answer, which would wait on a client that does not send it.
func refuse(w http.ResponseWriter, r *http.Request, err error) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	respond.Error(w, r, err)
}

// readAll reads r's body, at most limit bytes, until r's deadline: the connection's
// read deadline is set to it, so that a stalled read ends then. It is cleared once
// the body is read, so that the server's wait for the client's next request (or its
// going away) is not cut short by this request's deadline; after a failed read it
// stays, so that net/http's discarding of what is left of the body cannot block
// the answer (the connection is closed after it).
func readAll(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rc := http.NewResponseController(w)
	deadline, ok := r.Context().Deadline()
	ok = ok && rc.SetReadDeadline(deadline) == nil
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		if ok {
			_ = rc.SetReadDeadline(time.Time{})
		}
		return data, nil
	case errors.As(err, &mbe):
		return nil, tooLarge(mbe.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded) || r.Context().Err() != nil:
		return nil, apierrors.NewTimeoutError("request did not complete within the allotted timeout: its body did not arrive in time", 0)
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
}

func tooLarge(limit int64) error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", limit))
}

// bodyReaders counts, per user, the requests whose bodies are being read.
type bodyReaders struct {
	perUser int
	mu      sync.Mutex
	active  map[string]int
}

func (b *bodyReaders) acquire(user string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perUser > 0 && b.active[user] >= b.perUser {
		return false
	}
	b.active[user]++
	return true
}

func (b *bodyReaders) release(user string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.active[user]--; b.active[user] <= 0 {
		delete(b.active, user)
	}
}
