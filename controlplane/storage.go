package controlplane

import (
	"context"
	"path/filepath"

	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// stored is what the storage phase hands on: etcd's client, raw storage over it, and
// the server's metrics registry (storage's metrics are the first in it).
type stored struct {
	client  *clientv3.Client
	raw     *storage.Store
	metrics *prometheus.Registry
}

// startStorage is the storage phase: the embedded etcd in <data-dir>/etcd (the first
// component started, so the last stopped) or a client of an external cluster, and raw
// storage over it.
func startStorage(ctx context.Context, g *lifecycle.Group, o *Options) (stored, error) {
	client, closeEtcd, err := o.Etcd.Open(ctx, filepath.Join(o.DataDir, "etcd"))
	if err != nil {
		return stored{}, err
	}
	if err := g.Start(ctx, lifecycle.Closer("etcd", closeEtcd)); err != nil {
		closeEtcd()
		return stored{}, err
	}
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	raw := storage.New(client, o.Etcd.Prefix).WithMetrics(storage.NewMetrics(metrics))
	return stored{client: client, raw: raw, metrics: metrics}, nil
}
