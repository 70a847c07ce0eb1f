package identity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/retry"
	"github.com/concordproject/concord/wire"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Labels and the namespace of identity leases.
const (
	// Namespace holds every identity lease.
	Namespace = metav1.NamespaceSystem
	// LabelIdentity marks a lease as a server identity lease; its value names the kind
	// of server (Kubernetes' key).
	LabelIdentity = wire.LabelAPIServerIdentity
	// KubeAPIServer is LabelIdentity's value on Concord servers' leases.
	KubeAPIServer = wire.KindKubeAPIServer
	// LabelHostname names the host the server runs on.
	LabelHostname = corev1.LabelHostname
	// AnnotationEndpoint is where the server serves, <address>:<port> (its
	// advertise address), from which the kubernetes Service's endpoints are kept.
	AnnotationEndpoint = "concord.io/endpoint"
)

// Defaults of the lease timing. A crashed server's lease expires at most
// DefaultLeaseDuration after its last renewal, so whatever is collected on expiry (its
// StorageVersion entries) goes within about half a minute, not Kubernetes' hour.
const (
	DefaultLeaseDuration = 30 * time.Second
	DefaultRenewInterval = 10 * time.Second
)

// ElectionTimings derives the lease duration, renew deadline and retry period of a
// leader election among the servers from their identity lease duration d: half of d
// (whole seconds, at least one), two thirds of that, and a sixth of it (15s, 10s and
// 2.5s by default). So a new leader takes over from a dead one well before the dead
// server's identity lease expires. The servers' election of their controllers
// (among them the storage version and garbage collectors) is timed so.
func ElectionTimings(d time.Duration) (lease, renew, retry time.Duration) {
	lease = max(time.Second, (d / 2).Truncate(time.Second))
	return lease, lease * 2 / 3, lease / 6
}

// Post-start hook names, as kube-apiserver calls them.
const (
	LeaseControllerHook = "start-kube-apiserver-identity-lease-controller"
	LeaseCollectorHook  = "start-kube-apiserver-identity-lease-garbage-collector"
)

// GroupResource is the resource identity leases are objects of.
var GroupResource = schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"}

// leaseVersion is the version identity leases are read and written in.
const leaseVersion = "v1"

// Errors of the lease controller.
var (
	// ErrLeasesNotServed means that coordination.k8s.io leases are not in the registry.
	ErrLeasesNotServed = errors.New("coordination.k8s.io leases are not served by this server")
	// ErrInvalidConfig wraps every problem of a Config.
	ErrInvalidConfig = errors.New("invalid identity lease configuration")
	// ErrNotHolder means that the lease is held by another process claiming the same
	// server ID (two servers were given one ID).
	ErrNotHolder = errors.New("the identity lease is held by another process")
)

// Config configures a server's identity lease.
type Config struct {
	// ID is the server ID: the lease's name.
	ID string
	// Hostname is the LabelHostname value.
	Hostname string
	// Duration is how long the lease lasts after a renewal: a whole number of seconds
	// (spec.leaseDurationSeconds), at least one.
	Duration time.Duration
	// RenewInterval is how often the lease is renewed; it must be shorter than Duration.
	RenewInterval time.Duration
	// Versions fill the version labels (wire.LabelEmulationVersion and the others), so
	// that peers and the version skew controller can tell which release each server is.
	Versions wire.ComponentVersions
	// Endpoint fills AnnotationEndpoint (empty: none).
	Endpoint string
}

// releaseTimeout bounds the deletion of the lease when the server stops.
const releaseTimeout = 10 * time.Second

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.ID == "" {
		errs = append(errs, errors.New("the server ID is empty"))
	}
	if c.Duration < time.Second || c.Duration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("lease duration %s must be a whole number of seconds, at least 1s", c.Duration))
	}
	if c.RenewInterval <= 0 || c.RenewInterval >= c.Duration {
		errs = append(errs, fmt.Errorf("renew interval %s must be positive and shorter than the lease duration %s", c.RenewInterval, c.Duration))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Lease keeps one server's identity lease: a coordination.k8s.io/v1 Lease in
// kube-system named by the server ID, held by "<id>_<uuid>" (a new uuid per process),
// renewed every RenewInterval, recreated at once if it is deleted. It writes through
// the object store directly: it is the server itself, and must not depend on its own
// HTTP path.
type Lease struct {
	cfg    Config
	holder string
	reg    *registry.Registry
	store  *store.Store

	// validUntil is when the lease expires as last written (unix nanoseconds); 0 before
	// the first renewal.
	validUntil atomic.Int64
	// acquired is true once the first renewal succeeded: later losses are lapses.
	acquired atomic.Bool
	// renewals renews the lease: its one key is requeued every RenewInterval, at once
	// when the lease is seen deleted or taken, and with a backoff from 100ms up to
	// RenewInterval after a failure.
	renewals *reconcile.Controller[struct{}]

	mu       sync.Mutex
	uid      string   // of the lease as last written
	lapsed   []func() // OnLapse's
	firstErr error    // why the last write before the first success failed
}

// NewLease returns the lease controller of a server; Run acquires and keeps the lease.
func NewLease(reg *registry.Registry, st *store.Store, cfg Config) (*Lease, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Lease{cfg: cfg, holder: cfg.ID + "_" + string(uuid.NewUUID()), reg: reg, store: st}
	l.renewals = reconcile.New("server-identity-lease", reconcile.Func[struct{}](l.renewal),
		reconcile.Options[struct{}]{Backoff: reconcile.Backoff{Base: 100 * time.Millisecond, Max: cfg.RenewInterval}})
	return l, nil
}

// ID returns the server ID (the lease's name).
func (l *Lease) ID() string { return l.cfg.ID }

// HolderIdentity returns "<id>_<uuid>", unique to this process.
func (l *Lease) HolderIdentity() string { return l.holder }

// Duration returns the lease duration.
func (l *Lease) Duration() time.Duration { return l.cfg.Duration }

// OnLapse registers f to be called when the lease was lost and taken back: recreated
// after someone deleted it, or renewed after it had expired. Whatever the server
// registered under its ID may have been collected meanwhile. f runs synchronously,
// before Valid reports true again, and must not block for long. Register before Run.
func (l *Lease) OnLapse(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lapsed = append(l.lapsed, f)
}

// Ready reports nil once the lease has been written, else why not: the last write's
// error, if one failed.
func (l *Lease) Ready() error {
	if l.acquired.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firstErr != nil {
		return fmt.Errorf("%w: %w", errNotAcquired, l.firstErr)
	}
	return errNotAcquired
}

var errNotAcquired = errors.New("the identity lease has not been written yet")

// Valid reports whether the lease, as this server last renewed it, has not expired at
// now. A server whose lease expired may have had everything registered under its ID
// collected by a peer.
func (l *Lease) Valid(now time.Time) bool {
	until := l.validUntil.Load()
	return until != 0 && now.UnixNano() < until
}

// Run writes the lease (creating it, or taking over the one a previous run of this
// server left), then renews it until ctx is done, and then deletes it so that peers
// need not wait for it to expire (a failure to is logged: the lease expires by
// itself). It returns an error only when leases are not served. A first write that
// fails (etcd slow or away while the server starts) is retried as a failed renewal
// is, with the queue's backoff; Ready reports the lease missing until one succeeds.
func (l *Lease) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("identity-lease")
	ctx = klog.NewContext(ctx, logger)
	next := l.cfg.RenewInterval
	if err := l.renew(ctx); errors.Is(err, ErrLeasesNotServed) {
		return fmt.Errorf("writing identity lease %s/%s: %w", Namespace, l.cfg.ID, err)
	} else if err != nil {
		l.notAcquired(err)
		logger.Error(err, "Cannot write the identity lease yet; retrying", "lease", l.cfg.ID)
		next = 0
	}
	inf := l.store.NewInformer(store.Source{Registry: l.reg, Resource: GroupResource, Version: leaseVersion, Namespace: Namespace,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", l.cfg.ID).String()}, nil)
	if err := l.followOwn(inf); err != nil {
		logger.Error(err, "Cannot follow the identity lease; it is still renewed on schedule")
	} else {
		defer reconcile.StartInformers(ctx, inf)()
	}
	l.renewals.AddAfter(struct{}{}, next) // the renewal deadline: a requeue, as every retry
	_ = l.renewals.Run(ctx)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := l.release(rctx); err != nil {
		logger.Error(err, "Cannot delete the identity lease; it expires by itself", "lease", l.cfg.ID)
	}
	return nil
}

// renewal renews the lease once and says when to again.
func (l *Lease) renewal(ctx context.Context, _ struct{}) (reconcile.Result, error) {
	if err := l.renew(ctx); err != nil {
		if !l.acquired.Load() {
			l.notAcquired(err)
			return reconcile.Result{}, fmt.Errorf("writing identity lease %s: %w", l.cfg.ID, err)
		}
		return reconcile.Result{}, fmt.Errorf("renewing identity lease %s (valid for %s more): %w",
			l.cfg.ID, max(0, time.Until(time.Unix(0, l.validUntil.Load()))).Round(time.Millisecond), err)
	}
	return reconcile.Result{RequeueAfter: l.cfg.RenewInterval}, nil
}

// notAcquired records why a write before the first success failed, for Ready.
func (l *Lease) notAcquired(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.firstErr = err
}

// renew writes the lease once: renewTime now, with the current labels,
// holder and duration; it creates the lease when it is missing.
func (l *Lease) renew(ctx context.Context) error {
	res := l.reg.Get(GroupResource)
	if res == nil {
		return ErrLeasesNotServed
	}
	timeout := max(l.cfg.RenewInterval, l.cfg.Duration/3)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	now := time.Now()
	var previousHolder string
	obj, created, err := l.store.Update(cctx, store.Ref{Resource: res, Version: leaseVersion, Namespace: Namespace, Name: l.cfg.ID}, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		previousHolder = ""
		if cur == nil {
			cur = &unstructured.Unstructured{Object: map[string]interface{}{}}
			cur.SetAPIVersion(coordinationv1.SchemeGroupVersion.String())
			cur.SetKind("Lease")
			cur.SetName(l.cfg.ID)
			cur.SetNamespace(Namespace)
		} else {
			previousHolder, _, _ = unstructured.NestedString(cur.Object, "spec", "holderIdentity")
		}
		l.fill(cur, now)
		return cur, nil
	}, store.UpdateOptions{AllowCreate: true})
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	lapsed := false
	if l.acquired.Load() {
		switch {
		case created:
			logger.Info("Identity lease was deleted: recreated it", "lease", l.cfg.ID)
			lapsed = true
		case !l.Valid(time.Now()):
			// Checked after the write: the lease may have expired while it was in
			// flight, and peers may have collected what this server registered.
			logger.Info("Identity lease had expired before this renewal", "lease", l.cfg.ID)
			lapsed = true
		case previousHolder != l.holder:
			logger.Error(ErrNotHolder, "Took the identity lease back: two servers may share one ID", "lease", l.cfg.ID, "holder", previousHolder)
			lapsed = true
		}
	} else if previousHolder != "" && previousHolder != l.holder {
		logger.V(2).Info("Took over the identity lease of a previous run", "lease", l.cfg.ID, "previousHolder", previousHolder)
	}
	l.mu.Lock()
	l.uid = string(obj.GetUID())
	observers := l.lapsed
	l.mu.Unlock()
	if lapsed {
		for _, f := range observers {
			f()
		}
	}
	l.validUntil.Store(now.Add(l.cfg.Duration).UnixNano())
	l.acquired.Store(true)
	return nil
}

// fill sets what this server owns in its lease.
func (l *Lease) fill(obj *unstructured.Unstructured, now time.Time) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelIdentity] = KubeAPIServer
	if l.cfg.Hostname != "" {
		labels[LabelHostname] = l.cfg.Hostname
	}
	maps.Copy(labels, l.cfg.Versions.Labels())
	obj.SetLabels(labels)
	if l.cfg.Endpoint != "" {
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[AnnotationEndpoint] = l.cfg.Endpoint
		obj.SetAnnotations(annotations)
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	if spec == nil {
		spec = map[string]interface{}{}
	}
	spec["holderIdentity"] = l.holder
	spec["leaseDurationSeconds"] = int64(l.cfg.Duration / time.Second)
	spec["renewTime"] = metav1.NewMicroTime(now).UTC().Format(metav1.RFC3339Micro)
	obj.Object["spec"] = spec
}

// followOwn makes inf (of the lease alone) ask for an immediate renewal when the lease
// is deleted or taken by another holder.
func (l *Lease) followOwn(inf cache.SharedIndexInformer) error {
	poke := func() { l.renewals.Add(struct{}{}) }
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				if h, _, _ := unstructured.NestedString(u.Object, "spec", "holderIdentity"); h != l.holder {
					poke()
				}
			}
		},
		DeleteFunc: func(interface{}) { poke() },
	})
	return err
}

// release deletes the lease if this process still holds it, once renewals have
// stopped. It is the last thing a server does with its identity on a graceful
// shutdown.
func (l *Lease) release(ctx context.Context) error {
	l.validUntil.Store(0)
	res := l.reg.Get(GroupResource)
	if res == nil {
		return ErrLeasesNotServed
	}
	// A write that lands between the read and the delete (the informer's handler
	// restoring the lease as the server stops) fails the delete's precondition: the
	// lease is read again and the delete retried, as any conflict.
	return retry.OnConflict(ctx, func(ctx context.Context) error { return l.deleteOwn(ctx, res) })
}

// deleteOwn deletes the lease if this server holds it, preconditioned on what it read.
func (l *Lease) deleteOwn(ctx context.Context, res *registry.Resource) error {
	cur, err := l.store.Get(ctx, store.Ref{Resource: res, Version: leaseVersion, Namespace: Namespace, Name: l.cfg.ID}, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if h, _, _ := unstructured.NestedString(cur.Object, "spec", "holderIdentity"); h != l.holder {
		return fmt.Errorf("%w (%s): left in place", ErrNotHolder, h)
	}
	uid, rv := cur.GetUID(), cur.GetResourceVersion()
	_, _, err = l.store.Delete(ctx, store.Ref{Resource: res, Version: leaseVersion, Namespace: Namespace, Name: l.cfg.ID}, store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
