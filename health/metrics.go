package health

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics records check results under the names kube-apiserver uses, so existing
// dashboards and alerts apply.
type metrics struct {
	// result is 1 if the check's latest evaluation passed, 0 if it failed.
	result *prometheus.GaugeVec
	// total counts evaluations by outcome.
	total *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		result: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubernetes_healthcheck",
			Help: "Result of the latest evaluation of a health check: 1 passed, 0 failed.",
		}, []string{"name", "type"})),
		total: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubernetes_healthchecks_total",
			Help: "Number of health check evaluations, by outcome.",
		}, []string{"name", "status", "type"})),
	}
}

// register adds c to reg. If reg already holds an identical collector (another
// Endpoints registered first), that one is returned so both share the series. A nil
// reg leaves c unregistered. Any other registration error is a programming error
// (a different metric under the same name) and panics.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(fmt.Errorf("health: registering metrics: %w", err))
}

// observe records one evaluation of check on endpoint.
func (m *metrics) observe(endpoint, check string, err error) {
	result, status := 1.0, "success"
	if err != nil {
		result, status = 0, "error"
	}
	m.result.WithLabelValues(check, endpoint).Set(result)
	m.total.WithLabelValues(check, status, endpoint).Inc()
}
