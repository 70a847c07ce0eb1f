package watchcache

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the caches' figures.
type metrics struct {
	reads     *prometheus.CounterVec
	evictions *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, limit int64, m *Caches) *metrics {
	mt := &metrics{
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
		reg.MustRegister(mt.reads, mt.evictions, limitGauge, newHoldings(m))
	}
	return mt
}

// holdings reports what each cache holds when scraped, read from the caches
// themselves: a scrape right after a list sees the encodings that list kept.
type holdings struct {
	caches         *Caches
	bytes, objects *prometheus.Desc
}

func newHoldings(m *Caches) *holdings {
	return &holdings{
		caches: m,
		bytes: prometheus.NewDesc("concord_watch_cache_memory_bytes",
			"Estimated memory a resource's watch cache holds: its objects' keys and stored values, the encodings kept for lists, its history of changes, what kept snapshots hold, and bookkeeping.",
			[]string{"resource"}, nil),
		objects: prometheus.NewDesc("concord_watch_cache_objects",
			"Objects held by a resource's watch cache.", []string{"resource"}, nil),
	}
}

func (h *holdings) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.bytes
	ch <- h.objects
}

func (h *holdings) Collect(ch chan<- prometheus.Metric) {
	h.caches.mu.Lock()
	all := h.caches.all()
	h.caches.mu.Unlock()
	for _, c := range all {
		c.mu.RLock()
		b, n := c.bytes, c.objects
		c.mu.RUnlock()
		ch <- prometheus.MustNewConstMetric(h.bytes, prometheus.GaugeValue, float64(b), c.resource)
		ch <- prometheus.MustNewConstMetric(h.objects, prometheus.GaugeValue, float64(n), c.resource)
	}
}

// resourceLabel names a prefix's resource in metrics: "<group>/<resource>".
func resourceLabel(prefix string) string { return strings.TrimSuffix(prefix, "/") }
