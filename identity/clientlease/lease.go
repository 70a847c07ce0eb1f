package clientlease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/reconcile"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Namespace holds every identity lease.
const Namespace = metav1.NamespaceSystem

// Defaults of Config's timing, Concord's servers' own.
const (
	DefaultDuration      = 30 * time.Second
	DefaultRenewInterval = 10 * time.Second
)

// releaseTimeout bounds the deletion of the lease once Run's context is done.
const releaseTimeout = 10 * time.Second

// ErrInvalidConfig wraps every problem of a Config.
var ErrInvalidConfig = errors.New("invalid identity lease configuration")

// Config configures a Lease.
type Config struct {
	// Client reaches the API server as the component's identity, which may get,
	// create, update and delete leases in kube-system.
	Client kubernetes.Interface
	// Name is the component's ID: the lease's name and holder.
	Name string
	// Labels are set on the lease at every renewal (others' labels are kept).
	Labels map[string]string
	// Duration and RenewInterval time the lease (defaults above).
	Duration, RenewInterval time.Duration
	// Metrics receives Run's reconcile samples (nil: not exported).
	Metrics *reconcile.Metrics
	// ExpireOnRelease makes Release mark the lease expired rather than delete it, for
	// components that may update leases but not delete them; the storage version
	// garbage collector of the servers deletes expired identity leases.
	ExpireOnRelease bool
}

// Lease keeps one component's identity lease. Create it with New; it is safe for
// concurrent use.
type Lease struct {
	cfg  Config
	held atomic.Bool
}

// New checks cfg and returns its lease, not yet written.
func New(cfg Config) (*Lease, error) {
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.RenewInterval == 0 {
		cfg.RenewInterval = DefaultRenewInterval
	}
	var errs []error
	if cfg.Client == nil || cfg.Name == "" {
		errs = append(errs, errors.New("a client and a name are required"))
	}
	if cfg.Duration < time.Second || cfg.RenewInterval <= 0 || cfg.RenewInterval >= cfg.Duration {
		errs = append(errs, fmt.Errorf("renew interval %s must be positive and shorter than the lease duration %s (at least 1s)", cfg.RenewInterval, cfg.Duration))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	cfg.Labels = maps.Clone(cfg.Labels)
	return &Lease{cfg: cfg}, nil
}

// RenewInterval is how often Run renews the lease.
func (l *Lease) RenewInterval() time.Duration { return l.cfg.RenewInterval }

// Held reports whether the lease was written at least once.
func (l *Lease) Held() bool { return l.held.Load() }

// Renew creates the lease, or moves its renewTime to now and sets its labels.
func (l *Lease) Renew(ctx context.Context) error {
	leases := l.cfg.Client.CoordinationV1().Leases(Namespace)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, l.cfg.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		secs := int32(l.cfg.Duration / time.Second)
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: l.cfg.Name, Namespace: Namespace, Labels: maps.Clone(l.cfg.Labels)},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &l.cfg.Name, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
	} else if err == nil {
		if lease.Labels == nil {
			lease.Labels = map[string]string{}
		}
		maps.Copy(lease.Labels, l.cfg.Labels)
		lease.Spec.RenewTime = &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	l.held.Store(true)
	return nil
}

// Release ends the lease: deletes it, or with ExpireOnRelease moves its renewTime back
// by its duration, so that it has expired (gone already is fine).
func (l *Lease) Release(ctx context.Context) error {
	l.held.Store(false)
	leases := l.cfg.Client.CoordinationV1().Leases(Namespace)
	var err error
	if !l.cfg.ExpireOnRelease {
		err = leases.Delete(ctx, l.cfg.Name, metav1.DeleteOptions{})
	} else {
		var lease *coordinationv1.Lease
		if lease, err = leases.Get(ctx, l.cfg.Name, metav1.GetOptions{}); err == nil {
			past := metav1.NewMicroTime(time.Now().Add(-l.cfg.Duration))
			lease.Spec.RenewTime = &past
			_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// Run renews the lease every renew interval until ctx is done, then deletes it
// (or marks it expired, see Release; bounded by a few seconds; one that stays lapses
// by itself), and returns nil.
func (l *Lease) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("identityLease", l.cfg.Name))
	ctrl := reconcile.New("identity-lease", reconcile.Func[struct{}](func(ctx context.Context, _ struct{}) (reconcile.Result, error) {
		if err := l.Renew(ctx); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: l.cfg.RenewInterval}, nil
	}), reconcile.Options[struct{}]{Metrics: l.cfg.Metrics})
	ctrl.Add(struct{}{})
	_ = ctrl.Run(ctx)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := l.Release(rctx); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot release the identity lease; it lapses by itself")
	}
	return nil
}
