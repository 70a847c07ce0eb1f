package reconcile

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the samples of every controller of a process, labelled by controller.
// Hand them to each controller's Options. NewMetrics on a registry that has them
// already returns the registered ones, so that independent parts of a process (the
// server's controllers, the in-process storage-migration controllers) share them.
type Metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not exported).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "concord_controller_reconcile_total",
			Help: "Reconciles by controller and outcome (success, requeue, conflict, error, terminal).",
		}, []string{"controller", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "concord_controller_reconcile_duration_seconds",
			Help:    "Time a reconcile takes, by controller.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10), // 0.5ms to about 2 min
		}, []string{"controller"}),
	}
	if reg != nil {
		m.total = register(reg, m.total)
		m.duration = register(reg, m.duration)
	}
	return m
}

// register registers c with reg, or returns the equal collector reg has already.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err) // a different metric of the same name: a programming error
	}
	return c
}
