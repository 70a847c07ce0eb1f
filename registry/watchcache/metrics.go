package watchcache

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the caches' figures.
type metrics struct {
	bytes     *prometheus.GaugeVec
	objects   *prometheus.GaugeVec
	reads     *prometheus.CounterVec
	evictions *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, limit int64) *metrics {
	m := &metrics{
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "concord_watch_cache_memory_bytes",
			Help: "Estimated memory a resource's watch cache holds: its objects' keys and stored values, its history of changes, and bookkeeping.",
		}, []string{"resource"}),
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "concord_watch_cache_objects",
			Help: "Objects held by a resource's watch cache.",
		}, []string{"resource"}),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "concord_watch_cache_reads_total",
			Help: "Lists and watches of a resource, by where they were answered from: the watch cache or etcd.",
		}, []string{"resource", "verb", "source"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "concord_watch_cache_evictions_total",
			Help: "Watch caches stopped, by reason: idle (unused), memory (over the limit).",
		}, []string{"resource", "reason"}),
	}
	limitGauge := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "concord_watch_cache_memory_limit_bytes",
		Help: "The bound on the watch caches' estimated memory (--watch-cache-memory-limit); 0 is none.",
	})
	limitGauge.Set(float64(limit))
	if reg != nil {
		reg.MustRegister(m.bytes, m.objects, m.reads, m.evictions, limitGauge)
	}
	return m
}

// resourceLabel names a prefix's resource in metrics: "<group>/<resource>".
func resourceLabel(prefix string) string { return strings.TrimSuffix(prefix, "/") }
