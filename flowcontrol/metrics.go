package flowcontrol

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// metricPrefix starts the names of the flowcontrol library's metrics.
const metricPrefix = "apiserver_flowcontrol_"

// Gatherer gathers the apiserver_flowcontrol_* metrics (nominal and current
// concurrency limits, seats in use, queued and rejected requests, per priority level
// and flow schema), which the flowcontrol library keeps in component-base's
// process-wide registry, for the server's /metrics.
func (c *Controller) Gatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		all, err := legacyregistry.DefaultGatherer.Gather()
		var out []*dto.MetricFamily
		for _, mf := range all {
			if strings.HasPrefix(mf.GetName(), metricPrefix) {
				out = append(out, mf)
			}
		}
		return out, err
	})
}
