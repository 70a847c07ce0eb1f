package filters

import (
	"net/http"
	"sync"
	"unicode/utf8"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/warning"
)

// maxWarningRunes bounds the text of the warnings one answer carries, as Kubernetes
// bounds them: warnings past it are dropped.
const maxWarningRunes = 4 * 1024

// Warnings gives each request a warning.Recorder (k8s.io/apiserver/pkg/warning), so
// that code deep in the request (admission policies' Warn action) can warn the client:
// each distinct warning becomes a Warning header (code 299) of the answer, if it is
// recorded before the answer's headers are written.
func Warnings() Filter {
	return Filter{Name: "warnings", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &warningRecorder{w: w, seen: map[string]bool{}}
			next.ServeHTTP(w, r.WithContext(warning.WithWarningRecorder(r.Context(), rec)))
		})
	}}
}

// warningRecorder adds a request's warnings to its answer's headers.
type warningRecorder struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	seen  map[string]bool
	runes int
}

var _ warning.Recorder = (*warningRecorder)(nil)

// AddWarning adds text, once, unless the answer's warnings would grow past the bound.
func (r *warningRecorder) AddWarning(agent, text string) {
	if text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := utf8.RuneCountInString(text)
	if r.seen[text] || r.runes+n > maxWarningRunes {
		return
	}
	header, err := utilnet.NewWarningHeader(299, agent, text)
	if err != nil {
		return
	}
	r.seen[text] = true
	r.runes += n
	r.w.Header().Add("Warning", header)
}
