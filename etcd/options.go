package etcd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultCompactionInterval is kube-apiserver's --etcd-compaction-interval.
const DefaultCompactionInterval = 5 * time.Minute

// Options are a server's etcd flags, kube-apiserver's: the cluster it stores in (none:
// an embedded etcd), the prefix of its keys, how often its history is compacted, and
// whether an embedded etcd skips fsync.
type Options struct {
	ClientConfig
	// Prefix begins every key the server writes.
	Prefix string
	// CompactionInterval is how often the servers sharing the etcd compact its history
	// older than that; 0 leaves compaction to etcd or its operator.
	CompactionInterval time.Duration
	// UnsafeNoFsync makes an embedded etcd skip fsync (tests only).
	UnsafeNoFsync bool
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{Prefix: "/registry", CompactionInterval: DefaultCompactionInterval}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.ClientConfig.AddFlags(fs)
	fs.StringVar(&o.Prefix, "etcd-prefix", o.Prefix, "Prefix of every etcd key Concord writes.")
	fs.DurationVar(&o.CompactionInterval, "etcd-compaction-interval", o.CompactionInterval,
		"How often the servers sharing the etcd compact its history older than that, taking turns; 0 leaves compaction to etcd or its operator.")
	fs.BoolVar(&o.UnsafeNoFsync, "etcd-unsafe-no-fsync", o.UnsafeNoFsync, "Embedded etcd skips fsync: faster, loses data on a crash (tests only).")
	_ = fs.MarkHidden("etcd-unsafe-no-fsync")
}

// Validate reports each invalid option as one line saying what is allowed.
func (o *Options) Validate() []error {
	var errs []error
	if len(o.Endpoints) > 0 {
		if err := o.ClientConfig.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Prefix == "" || o.Prefix[0] != '/' {
		errs = append(errs, fmt.Errorf("--etcd-prefix %q must start with /", o.Prefix))
	}
	if o.CompactionInterval < 0 {
		errs = append(errs, fmt.Errorf("--etcd-compaction-interval %s must not be negative (0 turns compaction off)", o.CompactionInterval))
	}
	return errs
}

// Open connects to the cluster the options name or, when they name none, starts an
// etcd embedded in dir; it returns a client of it and the function that closes the
// client, then the embedded etcd.
func (o *Options) Open(ctx context.Context, dir string) (*clientv3.Client, func(), error) {
	if len(o.Endpoints) > 0 {
		client, err := NewClient(ctx, o.ClientConfig)
		if err != nil {
			return nil, nil, err
		}
		return client, func() { _ = client.Close() }, nil
	}
	var opts []LoopbackOption
	if o.UnsafeNoFsync {
		opts = append(opts, WithUnsafeNoFsync())
	}
	m, err := StartLoopback(ctx, dir, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("starting the embedded etcd: %w", err)
	}
	client, err := m.NewClient(ctx)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return client, func() { _ = client.Close(); m.Close() }, nil
}
