package storageversion

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the storage version metrics of one server.
type metrics struct {
	// registration is the time from the server's start until every built-in resource
	// had its entry written (the write barrier lifted for all of them).
	registration prometheus.Gauge
	// updateLatency times writing one entry (conflict retries included), by result.
	updateLatency *prometheus.HistogramVec
	// conflicts counts writes that met a concurrent change; retries the attempts
	// that followed (a conflict or another error).
	conflicts prometheus.Counter
	retries   prometheus.Counter
	// agreement times how long objects went without a common encoding version: from
	// the change that made their entries disagree until they agreed again.
	agreement prometheus.Histogram
	// rejections counts the writes the barrier refused, by resource.
	rejections *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		registration: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apiserver_storage_version_registration_seconds",
			Help: "Time from the server's start until the storage versions of all its built-in resources were registered.",
		}),
		updateLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_storage_version_update_duration_seconds",
			Help:    "Time to write this server's entry in a StorageVersion, conflict retries included, by result.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"result"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_storage_version_update_conflicts_total",
			Help: "StorageVersion writes of this server that met a concurrent change.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_storage_version_update_retries_total",
			Help: "StorageVersion write attempts of this server that repeated a failed one.",
		}),
		agreement: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "apiserver_storage_version_agreement_seconds",
			Help:    "Time StorageVersions went without a common encoding version, from the change that made the servers disagree until they agreed again.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_storage_version_barrier_rejections_total",
			Help: "Writes refused with 503 because this server had not registered the storage version of their resource.",
		}, []string{"resource"}),
	}
	if reg != nil {
		reg.MustRegister(m.registration, m.updateLatency, m.conflicts, m.retries, m.agreement, m.rejections)
	}
	return m
}

// newCollectedMetric counts what the garbage collector removed while this server led
// it, by kind: entry (of a server without a live identity lease), object (a
// StorageVersion left without entries, or whose CustomResourceDefinition is gone) and
// lease (an expired identity lease).
func newCollectedMetric(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_storage_version_garbage_collected_total",
		Help: "What the storage version garbage collector removed while this server led it, by kind: entry, object or lease.",
	}, []string{"kind"})
	if reg != nil {
		reg.MustRegister(c)
	}
	return c
}
