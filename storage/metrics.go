package storage

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the etcd request metrics of a Store.
type Metrics struct {
	latency *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_request_duration_seconds",
		Help:    "Latency of etcd requests, by operation and resource type (group/resource of the key).",
		Buckets: []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"operation", "type"})}
	if reg != nil {
		reg.MustRegister(m.latency)
	}
	return m
}

// WithMetrics makes the store record its etcd requests in m.
func (s *Store) WithMetrics(m *Metrics) *Store {
	s.metrics = m
	return s
}

// observe records one request on key that started at start.
func (s *Store) observe(op, key string, start time.Time) {
	if s.metrics == nil {
		return
	}
	s.metrics.latency.WithLabelValues(op, keyType(key)).Observe(time.Since(start).Seconds())
}

// keyType is the "<group>/<resource>" part of a key, the resource type in metrics.
func keyType(key string) string {
	key = strings.TrimPrefix(key, "/")
	first := strings.IndexByte(key, '/')
	if first < 0 {
		return key
	}
	second := strings.IndexByte(key[first+1:], '/')
	if second < 0 {
		return key
	}
	return key[:first+1+second]
}
