package controller

import (
	"github.com/concordproject/concord/migration/migrator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the migration controller's Prometheus metrics. The resource label is
// "<resource>.<group>" (the StorageState name).
type Metrics struct {
	migrated   *prometheus.CounterVec
	skipped    *prometheus.CounterVec
	failed     *prometheus.CounterVec
	remaining  *prometheus.GaugeVec
	duration   *prometheus.HistogramVec
	migrations *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (none if nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		migrated: f.NewCounterVec(prometheus.CounterOpts{
			Name: "concord_storage_migration_objects_migrated_total",
			Help: "Objects rewritten in their resource's storage version (their resourceVersion moved).",
		}, []string{"resource"}),
		skipped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "concord_storage_migration_objects_skipped_total",
			Help: "Objects a migration did not need to write: already current, or changed or deleted meanwhile.",
		}, []string{"resource"}),
		failed: f.NewCounterVec(prometheus.CounterOpts{
			Name: "concord_storage_migration_objects_failed_total",
			Help: "Objects a migration could not rewrite; they are named in the migration's status.progress.failures.",
		}, []string{"resource"}),
		remaining: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "concord_storage_migration_objects_remaining",
			Help: "Objects a running migration has still to go through (from the count at its start); 0 when none runs.",
		}, []string{"resource"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "concord_storage_migration_duration_seconds",
			Help:    "Time from a migration's start to its end, by result (succeeded, failed).",
			Buckets: prometheus.ExponentialBuckets(0.05, 4, 10), // 50ms to about 3.6h
		}, []string{"resource", "result"}),
		migrations: f.NewCounterVec(prometheus.CounterOpts{
			Name: "concord_storage_migrations_total",
			Help: "Migrations ended, by result (succeeded, failed, aborted).",
		}, []string{"resource", "result"}),
	}
}

// page counts one page a migration went through.
func (m *Metrics) page(label string, r migrator.PageReport) {
	m.migrated.WithLabelValues(label).Add(float64(r.Page.Migrated))
	m.skipped.WithLabelValues(label).Add(float64(r.Page.Skipped))
	m.failed.WithLabelValues(label).Add(float64(r.Page.Failed))
	m.remaining.WithLabelValues(label).Set(float64(r.Checkpoint.Remaining()))
}
