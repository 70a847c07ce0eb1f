package filters

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/concordproject/concord/request"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts resource requests in apiserver_request_total and times them (watches
// excluded) in apiserver_request_duration_seconds, labelled as kube-apiserver labels
// them, on reg (nil: counted but not exported). Other requests are not counted, to
// keep the cardinality low. It must run after RequestInfo.
func Metrics(reg prometheus.Registerer) Filter {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_request_total",
		Help: "Requests served, by verb, group, version, resource, subresource and HTTP code.",
	}, []string{"verb", "group", "version", "resource", "subresource", "code"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_request_duration_seconds",
		Help:    "Time to serve a request (watches excluded), by verb, group, version, resource and subresource.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"verb", "group", "version", "resource", "subresource"})
	if reg != nil {
		reg.MustRegister(total, latency)
	}
	return Filter{Name: "metrics", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			info, ok := request.InfoFrom(r.Context())
			if !ok || !info.IsResourceRequest {
				return
			}
			code := rec.code
			if code == 0 {
				code = http.StatusOK
			}
			total.WithLabelValues(info.Verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource, strconv.Itoa(code)).Inc()
			if info.Verb != "watch" {
				latency.WithLabelValues(info.Verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource).Observe(time.Since(start).Seconds())
			}
		})
	}}
}

// statusRecorder remembers the status code written through it.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection over (a protocol upgrade: kube's WebSocket streams to
// a Pod): the answer is 101 Switching Protocols.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if r.code == 0 {
		r.code = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
