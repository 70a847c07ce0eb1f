package health

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// validName is what a check name must look like to be addressable as a sub-path.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*(/[A-Za-z0-9][A-Za-z0-9._:-]*)*$`)

// Endpoints holds the checks of /healthz, /livez and /readyz and serves them. A check
// may be on several lists. Every method is safe for concurrent use, including while
// the endpoints are serving.
type Endpoints struct {
	healthz, livez, readyz *endpoint
	shuttingDown           atomic.Bool
}

// New returns Endpoints with empty /healthz and /livez lists and a /readyz list
// holding only the "shutdown" check (ShutdownCheckName), which is always evaluated
// after the added checks. The check metrics are registered with reg; a nil reg keeps
// them unregistered. Endpoints built on the same reg share the metric series. New
// panics if reg holds different metrics under the same names.
func New(reg prometheus.Registerer) *Endpoints {
	m := newMetrics(reg)
	e := &Endpoints{}
	e.healthz = &endpoint{name: "healthz", metrics: m}
	e.livez = &endpoint{name: "livez", metrics: m}
	e.readyz = &endpoint{name: "readyz", metrics: m, last: []Checker{NamedCheck(ShutdownCheckName, e.checkShutdown)}}
	return e
}

// AddHealthz appends checks to /healthz. See AddReadyz for the rules.
func (e *Endpoints) AddHealthz(checks ...Checker) error { return e.healthz.add(checks) }

// AddLivez appends checks to /livez. See AddReadyz for the rules.
func (e *Endpoints) AddLivez(checks ...Checker) error { return e.livez.add(checks) }

// AddReadyz appends checks to /readyz. Either all checks are added or, on error, none:
// the error matches ErrInvalidCheck for a nil check or a name that is not a valid
// sub-path, and ErrDuplicateCheck for a name already on the list (including
// "shutdown") or given twice. Requests that start afterwards evaluate the new checks.
func (e *Endpoints) AddReadyz(checks ...Checker) error { return e.readyz.add(checks) }

// ShuttingDown makes the "shutdown" readiness check fail with ErrShuttingDown from now
// on, so /readyz reports not-ready while the server drains; /livez and /healthz are
// unaffected. It cannot be undone; calling it again has no effect.
func (e *Endpoints) ShuttingDown() { e.shuttingDown.Store(true) }

func (e *Endpoints) checkShutdown(*http.Request) error {
	if e.shuttingDown.Load() {
		return ErrShuttingDown
	}
	return nil
}

// Install registers /healthz, /livez and /readyz on mux, each with a
// /<endpoint>/<check name> sub-path for single checks, for any HTTP method. Checks
// added after Install are served too. Install panics, as mux does, if these patterns
// are already registered on mux.
func (e *Endpoints) Install(mux *http.ServeMux) {
	for _, ep := range []*endpoint{e.healthz, e.livez, e.readyz} {
		mux.HandleFunc("/"+ep.name, ep.serveAll)
		mux.HandleFunc("/"+ep.name+"/{name...}", ep.serveOne)
	}
}

// endpoint is one probe path and its ordered list of checks.
type endpoint struct {
	// name is the path without the slash; it is also the metrics' "type" label.
	name    string
	metrics *metrics
	// last holds built-in checks, evaluated after the added ones. Immutable.
	last []Checker

	mu     sync.RWMutex
	checks []Checker
}

func (ep *endpoint) add(checks []Checker) error {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	taken := sets.New[string]()
	for _, c := range slices.Concat(ep.checks, ep.last) {
		taken.Insert(c.Name())
	}
	for _, c := range checks {
		if c == nil {
			return fmt.Errorf("%w: nil check for /%s", ErrInvalidCheck, ep.name)
		}
		name := c.Name()
		if !validName.MatchString(name) {
			return fmt.Errorf("%w: name %q for /%s is not a valid path", ErrInvalidCheck, name, ep.name)
		}
		if taken.Has(name) {
			return fmt.Errorf("%w: %q is already on /%s", ErrDuplicateCheck, name, ep.name)
		}
		taken.Insert(name)
	}
	ep.checks = append(ep.checks, checks...)
	return nil
}

// Ready runs the readyz checks that include keeps (all with nil), in order, as GET
// /readyz does (without recording them in the metrics), and returns the first
// failure, naming its check; nil when they pass.
func (e *Endpoints) Ready(ctx context.Context, include func(Checker) bool) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/readyz", nil)
	if err != nil {
		return err
	}
	for _, c := range e.readyz.snapshot() {
		if include != nil && !include(c) {
			continue
		}
		if err := c.Check(r); err != nil {
			return fmt.Errorf("%s: %w", c.Name(), err)
		}
	}
	return nil
}

// snapshot returns the checks to evaluate, in order. The caller owns the slice.
func (ep *endpoint) snapshot() []Checker {
	ep.mu.RLock()
	defer ep.mu.RUnlock()
	return slices.Concat(ep.checks, ep.last)
}

// evaluate runs c, records the result in the metrics and logs a failure's reason.
func (ep *endpoint) evaluate(r *http.Request, c Checker) error {
	err := c.Check(r)
	ep.metrics.observe(ep.name, c.Name(), err)
	if err != nil {
		klog.FromContext(r.Context()).V(2).Info("Health check failed", "endpoint", ep.name, "check", c.Name(), "err", err)
	}
	return err
}

// serveAll answers /<endpoint>: every check not excluded, in order.
func (ep *endpoint) serveAll(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	excluded := sets.New(query["exclude"]...)
	var report strings.Builder
	failed := false
	for _, c := range ep.snapshot() {
		name := c.Name()
		switch {
		case excluded.Has(name):
			excluded.Delete(name)
			fmt.Fprintf(&report, "[+]%s excluded: ok\n", name)
		case ep.evaluate(r, c) != nil:
			// The reason stays out of the body: probes are often unauthenticated.
			fmt.Fprintf(&report, "[-]%s failed: reason withheld\n", name)
			failed = true
		default:
			fmt.Fprintf(&report, "[+]%s ok\n", name)
		}
	}
	if excluded.Len() > 0 {
		unknown := sets.List(excluded)
		quoted := make([]string, len(unknown))
		for i, name := range unknown {
			quoted[i] = strconv.Quote(name)
		}
		fmt.Fprintf(&report, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ", "))
		klog.FromContext(r.Context()).V(4).Info("Cannot exclude unknown health checks", "endpoint", ep.name, "names", unknown)
	}

	if failed {
		// http.Error sets the plain-text and nosniff headers and ends the body with a newline.
		http.Error(w, report.String()+ep.name+" check failed", http.StatusInternalServerError)
		return
	}
	setPlainText(w)
	if _, verbose := query["verbose"]; !verbose {
		_, _ = io.WriteString(w, "ok")
		return
	}
	_, _ = io.WriteString(w, report.String()+ep.name+" check passed\n")
}

// serveOne answers /<endpoint>/<name>: that check alone, with its reason on failure.
func (ep *endpoint) serveOne(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	checks := ep.snapshot()
	i := slices.IndexFunc(checks, func(c Checker) bool { return c.Name() == name })
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	if err := ep.evaluate(r, checks[i]); err != nil {
		http.Error(w, "internal server error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	setPlainText(w)
	_, _ = io.WriteString(w, "ok")
}

func setPlainText(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}
