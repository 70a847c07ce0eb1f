package compatibility

import (
	"github.com/prometheus/client_golang/prometheus"
)

// RegisterMetrics registers on reg, with their final values, the metrics kube-apiserver
// exposes for compatibility versions:
//
//   - version_info{component,binary,emulation,min_compat} = 1, component "kube";
//   - kubernetes_feature_enabled{name,stage} = 1 or 0 for every feature gate that exists
//     at the emulation version, stage being ALPHA, BETA, DEPRECATED or "" (GA).
//
// Registering twice on the same registerer is an error (prometheus.AlreadyRegisteredError)
// and registers nothing.
func (c *Config) RegisterMetrics(reg prometheus.Registerer) error {
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "version_info",
		Help: "The binary, emulation and minimum compatibility versions of the component (always 1).",
	}, []string{"component", "binary", "emulation", "min_compat"})
	features := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "kubernetes",
		Name:      "feature_enabled",
		Help:      "Whether a feature gate is enabled (1) or not (0), with its stage at the emulation version.",
	}, []string{"name", "stage"})

	v := c.Versions
	info.WithLabelValues(Component, v.Binary.String(), v.Emulation.String(), v.MinCompatibility.String()).Set(1)
	for name, spec := range c.gate.GetAll() {
		value := 0.0
		if c.gate.Enabled(name) {
			value = 1
		}
		features.WithLabelValues(string(name), string(spec.PreRelease)).Set(value)
	}
	return registerAll(reg, info, features)
}

// registerAll registers every collector, or none: on an error, those already registered
// are unregistered.
func registerAll(reg prometheus.Registerer, cols ...prometheus.Collector) error {
	for i, col := range cols {
		if err := reg.Register(col); err != nil {
			for _, done := range cols[:i] {
				reg.Unregister(done)
			}
			return err
		}
	}
	return nil
}
