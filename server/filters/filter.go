package filters

import "net/http"

// Filter is one named stage of the handler chain.
type Filter struct {
	// Name identifies the stage in docs, tests and logs.
	Name string
	// Wrap returns a handler that does the stage's work around next.
	Wrap func(next http.Handler) http.Handler
}

// Build wraps h in chain, outermost first: a request passes chain[0] first and h last.
func Build(h http.Handler, chain []Filter) http.Handler {
	for i := len(chain) - 1; i >= 0; i-- {
		h = chain[i].Wrap(h)
	}
	return h
}
