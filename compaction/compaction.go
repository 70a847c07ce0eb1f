package compaction

import (
	"context"
	"time"

	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/storage"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// DefaultInterval is how often the history is compacted (kube-apiserver's
// --etcd-compaction-interval).
const DefaultInterval = etcd.DefaultCompactionInterval

// turn is the controller's one key.
type turn struct{}

// Controller compacts etcd's history every interval, taking turns with the other
// servers sharing the etcd.
type Controller struct {
	st       *storage.Store
	interval time.Duration
	last     storage.Compaction // the one worker's alone
	ctrl     *reconcile.Controller[turn]
	revision prometheus.Gauge
}

// New returns the compaction controller of st, compacting every interval. reg, if
// not nil, receives concord_etcd_compacted_revision.
func New(st *storage.Store, interval time.Duration, metrics *reconcile.Metrics, reg prometheus.Registerer) *Controller {
	c := &Controller{st: st, interval: interval, revision: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "concord_etcd_compacted_revision",
		Help: "The revision to which this server last compacted etcd's history (0: not yet).",
	})}
	if reg != nil {
		reg.MustRegister(c.revision)
	}
	c.ctrl = reconcile.New("etcd-compaction", reconcile.Func[turn](c.reconcile), reconcile.Options[turn]{Metrics: metrics})
	return c
}

// NewFeature returns the compaction controller of st (New) as the server runs it,
// compacting every interval; nil when interval is not positive (the server compacts
// nothing).
func NewFeature(st *storage.Store, interval time.Duration, metrics *reconcile.Metrics, reg prometheus.Registerer) *Controller {
	if interval <= 0 {
		return nil
	}
	return New(st, interval, metrics, reg)
}

// Checks are none: compaction has no post-start hook.
func (c *Controller) Checks() []health.Checker { return nil }

// Start starts it as the component etcd-compaction.
func (c *Controller) Start(ctx context.Context, g *lifecycle.Group) error {
	return g.Start(ctx, lifecycle.Component{Name: "etcd-compaction", Run: c.Run})
}

// Run takes turns until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	c.ctrl.Add(turn{})
	return c.ctrl.Run(ctx)
}

// reconcile takes one turn, and the next one an interval later.
func (c *Controller) reconcile(ctx context.Context, _ turn) (reconcile.Result, error) {
	next, compacted, err := c.st.CompactStep(ctx, c.last)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.last = next
	if compacted > 0 {
		c.revision.Set(float64(compacted))
		klog.FromContext(ctx).V(2).Info("Compacted etcd's history", "revision", compacted)
	}
	return reconcile.Result{RequeueAfter: c.interval}, nil
}
