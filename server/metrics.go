package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestMetrics are the per-request Prometheus metrics, labelled like
// kube-apiserver's.
type requestMetrics struct {
	total     *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	longrun   *prometheus.GaugeVec
	watchSent *prometheus.CounterVec
}

func newRequestMetrics(reg prometheus.Registerer) *requestMetrics {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Requests served, by verb, group, version, resource, subresource and HTTP code.",
		}, []string{"verb", "group", "version", "resource", "subresource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Time to serve a request (watches excluded), by verb, group, version, resource and subresource.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "group", "version", "resource", "subresource"}),
		longrun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Open watches, by group, version and resource.",
		}, []string{"verb", "group", "version", "resource"}),
		watchSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_events_total",
			Help: "Watch events sent, by group, version and resource.",
		}, []string{"group", "version", "resource"}),
	}
	if reg != nil {
		reg.MustRegister(m.total, m.latency, m.longrun, m.watchSent)
	}
	return m
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

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (m *requestMetrics) instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		info, ok := RequestInfoFrom(r.Context())
		if !ok || !info.IsResourceRequest {
			return // keep cardinality low: only API resource requests are counted
		}
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		m.total.WithLabelValues(info.Verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource, strconv.Itoa(code)).Inc()
		if info.Verb != "watch" {
			m.latency.WithLabelValues(info.Verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource).Observe(time.Since(start).Seconds())
		}
	})
}
