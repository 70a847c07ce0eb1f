package publisher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/concordproject/concord/identity/clientlease"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// LabelIdentity marks identity leases (Kubernetes' key); its value names the kind of
// server.
const LabelIdentity = wire.LabelAPIServerIdentity

// Defaults of Config's timing, Concord's servers' own.
const (
	DefaultLeaseDuration = clientlease.DefaultDuration
	DefaultRenewInterval = clientlease.DefaultRenewInterval
)

// withdrawTimeout bounds what Run does once its context is done.
const withdrawTimeout = 10 * time.Second

// ErrInvalidConfig wraps every problem of a Config.
var ErrInvalidConfig = errors.New("invalid storage version publisher configuration")

// Resource is what the server reports of one resource it persists: versions as
// apiVersions ("wardle.example.com/v1beta1").
type Resource struct {
	schema.GroupResource
	EncodingVersion                   string
	DecodableVersions, ServedVersions []string
}

// Config configures a Publisher.
type Config struct {
	// Client reaches the aggregator as the server's identity.
	Client kubernetes.Interface
	// ServerID names the server: its lease and its entries' apiServerID.
	ServerID string
	// Kind is the lease's LabelIdentity value, e.g. "wardle-apiserver".
	Kind string
	// Versions, if set, are the server's KEP-4330 versions, announced on its lease
	// (wire.LabelEmulationVersion and the others) for the version skew controller.
	Versions wire.ComponentVersions
	// Resources are the resources the server persists.
	Resources []Resource
	// LeaseDuration and RenewInterval time the lease (defaults above).
	LeaseDuration, RenewInterval time.Duration
	// Metrics receives the publisher's reconcile samples (nil: not exported).
	Metrics *reconcile.Metrics
}

// Publisher publishes one aggregated server's identity and entries. Create it with
// New; it is safe for concurrent use.
type Publisher struct {
	cfg Config

	lease *clientlease.Lease

	mu        sync.Mutex
	published map[schema.GroupResource]bool
	resources map[schema.GroupResource]Resource
	locks     map[schema.GroupResource]*sync.Mutex // serialize each resource's writes
	ctrl      *reconcile.Controller[key]           // set by Run
}

// New checks cfg and returns its publisher.
func New(cfg Config) (*Publisher, error) {
	var errs []error
	if cfg.Kind == "" {
		errs = append(errs, errors.New("a kind is required"))
	}
	labels := cfg.Versions.Labels()
	labels[LabelIdentity] = cfg.Kind
	lease, err := clientlease.New(clientlease.Config{Client: cfg.Client, Name: cfg.ServerID, Labels: labels,
		Duration: cfg.LeaseDuration, RenewInterval: cfg.RenewInterval})
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range cfg.Resources {
		if r.Resource == "" || r.EncodingVersion == "" {
			errs = append(errs, fmt.Errorf("resource %q needs a name and an encoding version", r.GroupResource))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	p := &Publisher{cfg: cfg, lease: lease, published: map[schema.GroupResource]bool{}, resources: map[schema.GroupResource]Resource{},
		locks: map[schema.GroupResource]*sync.Mutex{}}
	for _, r := range cfg.Resources {
		p.resources[r.GroupResource] = r
	}
	return p, nil
}

// Put publishes r, a resource the server persists now or reports anew (a changed
// storage version), and returns once the aggregator has its entry: a server calls it
// before it encodes objects in a new version. Run keeps it from then on.
func (p *Publisher) Put(ctx context.Context, r Resource) error {
	p.mu.Lock()
	p.resources[r.GroupResource] = r
	p.published[r.GroupResource] = false
	ctrl := p.ctrl
	p.mu.Unlock()
	if !p.lease.Held() { // an entry without a live lease is the garbage collector's
		if err := p.lease.Renew(ctx); err != nil {
			return err
		}
	}
	if err := p.publish(ctx, r.GroupResource); err != nil {
		return err
	}
	if ctrl != nil {
		ctrl.Add(key{r.GroupResource})
	}
	return nil
}

// Published reports whether the server's entry for gr is published.
func (p *Publisher) Published(gr schema.GroupResource) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.published[gr]
}

// key is what the publisher reconciles: the lease (zero GroupResource) or one
// resource's entry.
type key struct{ gr schema.GroupResource }

// Run holds the lease and publishes the entries until ctx is done, then withdraws the
// entries and deletes the lease (bounded by a few seconds), and returns nil.
func (p *Publisher) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("storageVersionPublisher", p.cfg.ServerID))
	ctrl := reconcile.New("storage-version-publisher", reconcile.Func[key](p.reconcile), reconcile.Options[key]{Metrics: p.cfg.Metrics})
	ctrl.Add(key{})
	p.mu.Lock()
	p.ctrl = ctrl
	for gr := range p.resources {
		ctrl.Add(key{gr})
	}
	p.mu.Unlock()
	_ = ctrl.Run(ctx)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
	defer cancel()
	p.withdraw(wctx)
	return nil
}

// reconcile renews the lease, or publishes one entry, and looks again after the renew
// interval.
func (p *Publisher) reconcile(ctx context.Context, k key) (reconcile.Result, error) {
	var err error
	if k.gr == (schema.GroupResource{}) {
		err = p.lease.Renew(ctx)
	} else {
		err = p.publish(ctx, k.gr)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: p.lease.RenewInterval()}, nil
}

// resource returns what the server reports of gr, and the lock of its writes.
func (p *Publisher) resource(gr schema.GroupResource) (Resource, *sync.Mutex) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lock := p.locks[gr]
	if lock == nil {
		lock = &sync.Mutex{}
		p.locks[gr] = lock
	}
	return p.resources[gr], lock
}

// all returns the resources the server reports.
func (p *Publisher) all() []Resource {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Resource, 0, len(p.resources))
	for _, r := range p.resources {
		out = append(out, r)
	}
	return out
}

// entry is the server's entry for r.
func (p *Publisher) entry(r Resource) apiserverinternalv1alpha1.ServerStorageVersion {
	return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: p.cfg.ServerID, EncodingVersion: r.EncodingVersion,
		DecodableVersions: r.DecodableVersions, ServedVersions: r.ServedVersions}
}
