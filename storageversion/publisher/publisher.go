package publisher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/concordproject/concord/reconcile"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// LabelIdentity marks identity leases (Kubernetes' key); its value names the kind of
// server.
const LabelIdentity = "apiserver.kubernetes.io/identity"

// leaseNamespace holds the identity leases.
const leaseNamespace = metav1.NamespaceSystem

// Defaults of Config's timing, Concord's servers' own.
const (
	DefaultLeaseDuration = 30 * time.Second
	DefaultRenewInterval = 10 * time.Second
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

	mu        sync.Mutex
	leaseHeld bool // the lease was written once
	published map[schema.GroupResource]bool
	resources map[schema.GroupResource]Resource
	locks     map[schema.GroupResource]*sync.Mutex // serialize each resource's writes
	ctrl      *reconcile.Controller[key]           // set by Run
}

// New checks cfg and returns its publisher.
func New(cfg Config) (*Publisher, error) {
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewInterval == 0 {
		cfg.RenewInterval = DefaultRenewInterval
	}
	var errs []error
	if cfg.Client == nil || cfg.ServerID == "" || cfg.Kind == "" {
		errs = append(errs, errors.New("a client, a server ID and a kind are required"))
	}
	if cfg.LeaseDuration < time.Second || cfg.RenewInterval <= 0 || cfg.RenewInterval >= cfg.LeaseDuration {
		errs = append(errs, fmt.Errorf("renew interval %s must be positive and shorter than the lease duration %s (at least 1s)", cfg.RenewInterval, cfg.LeaseDuration))
	}
	for _, r := range cfg.Resources {
		if r.Resource == "" || r.EncodingVersion == "" {
			errs = append(errs, fmt.Errorf("resource %q needs a name and an encoding version", r.GroupResource))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	p := &Publisher{cfg: cfg, published: map[schema.GroupResource]bool{}, resources: map[schema.GroupResource]Resource{},
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
	ctrl, held := p.ctrl, p.leaseHeld
	p.mu.Unlock()
	if !held { // an entry without a live lease is the garbage collector's
		if err := p.renew(ctx); err != nil {
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
		err = p.renew(ctx)
	} else {
		err = p.publish(ctx, k.gr)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: p.cfg.RenewInterval}, nil
}

// renew creates the lease, or moves its renewTime to now.
func (p *Publisher) renew(ctx context.Context) error {
	leases := p.cfg.Client.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, p.cfg.ServerID, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		secs := int32(p.cfg.LeaseDuration / time.Second)
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: p.cfg.ServerID, Namespace: leaseNamespace, Labels: map[string]string{LabelIdentity: p.cfg.Kind}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &p.cfg.ServerID, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
		p.held(err)
		return err
	}
	if err != nil {
		return err
	}
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[LabelIdentity] = p.cfg.Kind
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	p.held(err)
	return err
}

// held records that the lease was written, if err is nil.
func (p *Publisher) held(err error) {
	if err == nil {
		p.mu.Lock()
		p.leaseHeld = true
		p.mu.Unlock()
	}
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
