package controlplane

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// startStorage is the storage phase: the embedded etcd (the first component started,
// so the last stopped) or a client of an external cluster, and raw storage over it.
func (i *Instance) startStorage(ctx context.Context) (context.Context, error) {
	o := i.opts
	if len(o.Etcd.Endpoints) == 0 {
		var opts []etcd.LoopbackOption
		if o.Etcd.UnsafeNoFsync {
			opts = append(opts, etcd.WithUnsafeNoFsync())
		}
		m, err := etcd.StartLoopback(ctx, filepath.Join(o.DataDir, "etcd"), opts...)
		if err != nil {
			return ctx, fmt.Errorf("starting the embedded etcd: %w", err)
		}
		if err := i.start(ctx, closer("etcd", m.Close)); err != nil {
			return ctx, err
		}
		if i.client, err = m.NewClient(ctx); err != nil {
			return ctx, err
		}
	} else {
		var err error
		if i.client, err = etcd.NewClient(ctx, o.Etcd.ClientConfig); err != nil {
			return ctx, err
		}
	}
	if err := i.start(ctx, closer("etcd-client", func() { _ = i.client.Close() })); err != nil {
		return ctx, err
	}
	i.Metrics = prometheus.NewRegistry()
	i.Metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	i.raw = storage.New(i.client, o.Etcd.Prefix).WithMetrics(storage.NewMetrics(i.Metrics))
	return ctx, nil
}
