package server

import "github.com/prometheus/client_golang/prometheus"

// watchMetrics are the metrics of the watches the server serves, named as
// kube-apiserver names them. Request counts and latencies are the chain's (see
// filters.Metrics).
type watchMetrics struct {
	longrun   *prometheus.GaugeVec
	watchSent *prometheus.CounterVec
}

func newWatchMetrics(reg prometheus.Registerer) *watchMetrics {
	m := &watchMetrics{
		longrun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Open watches, by group, version and resource.",
		}, []string{"verb", "group", "version", "resource"}),
		watchSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_events_total",
			Help: "Watch events sent, by group, version and resource.",
		}, []string{"group", "version", "resource"}),
	}
	reg.MustRegister(m.longrun, m.watchSent)
	return m
}
