package migration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/controller"
	"github.com/concordproject/concord/migration/discovery"
	"github.com/concordproject/concord/migration/migrator"
	"github.com/concordproject/concord/migration/trigger"
	"github.com/concordproject/concord/reconcile"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Config configures the storage-migration controllers. Zero values take the
// defaults.
type Config struct {
	// RESTConfig reaches the API server; its user must be able to read every resource
	// and write every resource, StorageStates, StorageVersionMigrations, CRD status,
	// Leases and Events. Required.
	RESTConfig *rest.Config
	// Metrics, if set, receives the controllers' metrics.
	Metrics prometheus.Registerer
	// Migrator tunes how objects are rewritten (concurrency, rate, page size,
	// retries, fast path).
	Migrator migrator.Options
	// Migrations is how many migrations run at once (default 2).
	Migrations int
	// PollInterval is how often discovery is read and every StorageState's heartbeat
	// renewed (default 1m). StorageVersion objects are watched, not polled.
	PollInterval time.Duration
	// StalenessWindow is the heartbeat age past which a StorageState is reset to
	// "Unknown" and its resource migrated again (default 10m; at least twice
	// PollInterval).
	StalenessWindow time.Duration
	// RetryFailedAfter is the wait before a failed migration is started again,
	// doubling with each consecutive failure up to 6h (default 10m).
	RetryFailedAfter time.Duration
	// HistoryLimit is how many ended migrations the trigger keeps per resource
	// (default 3).
	HistoryLimit int
	// IgnoredResources are never migrated by the trigger (default: core and
	// events.k8s.io events, which expire on their own).
	IgnoredResources []schema.GroupResource
	// DisableTrigger runs only the migrations that others create.
	DisableTrigger bool
	// NoStorageVersions makes the trigger work from discovery alone, even where the
	// StorageVersion API is served.
	NoStorageVersions bool
	// SkipCRDs does not install the StorageState definition (and, where the server
	// does not serve it, the StorageVersionMigration one) at start.
	SkipCRDs bool
	// LeaderElection makes one controller active among several.
	LeaderElection LeaderElection
	// Installed, if set, is told the outcome of each attempt to install the
	// definitions: the error of a failed one (they are retried), nil once they are
	// installed (at once with SkipCRDs).
	Installed func(error)
}

// LeaderElection configures the election over a coordination.k8s.io Lease.
type LeaderElection struct {
	// Disabled runs the controllers at once, with no lease.
	Disabled bool
	// Namespace and Name name the Lease (defaults kube-system and
	// concord-storage-migration).
	Namespace, Name string
	// Identity is this candidate's (default: host name plus a random suffix).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's (defaults 15s,
	// 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// ErrInvalidConfig wraps every problem Config.Validate reports.
var ErrInvalidConfig = errors.New("invalid storage-migration configuration")

func (c Config) withDefaults() Config {
	if c.Migrations <= 0 {
		c.Migrations = 2
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Minute
	}
	if c.StalenessWindow <= 0 {
		c.StalenessWindow = max(10*time.Minute, 2*c.PollInterval)
	}
	if c.RetryFailedAfter <= 0 {
		c.RetryFailedAfter = 10 * time.Minute
	}
	if c.HistoryLimit <= 0 {
		c.HistoryLimit = 3
	}
	if c.IgnoredResources == nil {
		c.IgnoredResources = []schema.GroupResource{{Resource: "events"}, {Group: "events.k8s.io", Resource: "events"}}
	}
	le := &c.LeaderElection
	if le.Namespace == "" {
		le.Namespace = "kube-system"
	}
	if le.Name == "" {
		le.Name = "concord-storage-migration"
	}
	if le.Identity == "" {
		host, _ := os.Hostname()
		le.Identity = host + "_" + uuid.NewString()
	}
	if le.LeaseDuration <= 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline <= 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod <= 0 {
		le.RetryPeriod = 2 * time.Second
	}
	return c
}

// Validate reports every problem of c at once, wrapped in ErrInvalidConfig.
func (c Config) Validate() error {
	var errs []error
	if c.RESTConfig == nil {
		errs = append(errs, errors.New("a REST config is required"))
	}
	if err := c.Migrator.Validate(); err != nil {
		errs = append(errs, err)
	}
	d := c.withDefaults()
	if d.StalenessWindow < 2*d.PollInterval {
		errs = append(errs, fmt.Errorf("staleness window %v must be at least twice the poll interval %v", d.StalenessWindow, d.PollInterval))
	}
	if le := d.LeaderElection; !le.Disabled && (le.RenewDeadline >= le.LeaseDuration || le.RetryPeriod >= le.RenewDeadline) {
		errs = append(errs, fmt.Errorf("leader election: want retry period %v < renew deadline %v < lease duration %v", le.RetryPeriod, le.RenewDeadline, le.LeaseDuration))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Run runs the storage-migration controllers until ctx is done: it installs the
// definitions (unless cfg.SkipCRDs), then, while it holds the leader lease (or at
// once with leader election disabled), the trigger and the migration controller. It
// returns nil when ctx is done, an error only for an invalid cfg. Losing the lease
// stops the controllers, waits for them, and stands again.
//
// This is what `concord server` runs in-process (with its loopback config) and
// `concord controller-manager` runs out of process.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	logger := klog.FromContext(ctx).WithName("storage-migration")
	ctx = klog.NewContext(ctx, logger)
	restCfg := rest.CopyConfig(cfg.RESTConfig)
	restCfg.UserAgent = migrationapi.FieldManager
	// The data path has its own limit (cfg.Migrator.QPS); this client carries the
	// controllers' few writes per page and their watches.
	restCfg.QPS, restCfg.Burst = -1, 0
	cfg.RESTConfig = restCfg
	m := controller.NewMetrics(cfg.Metrics)

	if !cfg.SkipCRDs {
		err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: time.Second, Factor: 2, Steps: 1 << 30, Cap: 30 * time.Second},
			func(ctx context.Context) (bool, error) {
				err := EnsureCRDs(ctx, restCfg)
				if ctx.Err() != nil {
					return false, nil
				}
				if cfg.Installed != nil {
					cfg.Installed(err)
				}
				if err != nil {
					logger.Error(err, "Installing the storage-migration definitions; retrying")
					return false, nil
				}
				return true, nil
			})
		if err != nil {
			return nil // ctx done
		}
	}
	if cfg.SkipCRDs && cfg.Installed != nil {
		cfg.Installed(nil)
	}
	if cfg.LeaderElection.Disabled {
		return runControllers(ctx, cfg, m)
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	le := cfg.LeaderElection
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	return reconcile.RunElected(ctx, reconcile.Election{
		Name: le.Name, Lock: lock, LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
	}, func(ctx context.Context) {
		logger.Info("Leading: storage-migration controllers started", "identity", le.Identity)
		if err := runControllers(ctx, cfg, m); err != nil {
			logger.Error(err, "Storage-migration controllers failed")
		}
		logger.Info("Storage-migration controllers stopped", "identity", le.Identity)
	})
}

// runControllers runs the controllers until ctx is done and they have stopped.
func runControllers(ctx context.Context, cfg Config, m *controller.Metrics) error {
	logger := klog.FromContext(ctx)
	dyn, err := dynamic.NewForConfig(cfg.RESTConfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg.RESTConfig)
	if err != nil {
		return err
	}
	disc, err := clientdiscovery.NewDiscoveryClientForConfig(cfg.RESTConfig)
	if err != nil {
		return err
	}
	// Legacy discovery: aggregated discovery documents no storageVersionHash.
	res := discovery.New(disc.WithLegacy())
	if err := res.Refresh(ctx); err != nil {
		logger.Error(err, "Discovery failed; retrying on demand")
	}
	mig, err := migrator.New(cfg.RESTConfig, cfg.Migrator)
	if err != nil {
		return err
	}
	recorder, stopRecorder := reconcile.NewRecorder(ctx, cs, res.Served, migrationapi.FieldManager)
	defer stopRecorder()

	runtime := reconcile.NewMetrics(cfg.Metrics)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	svms := factory.ForResource(migrationapi.StorageVersionMigrations).Informer()
	ctrl, err := controller.New(controller.Config{Dynamic: dyn, Resources: res, Migrator: mig, Informer: svms,
		Recorder: recorder, Metrics: m, Runtime: runtime, Workers: cfg.Migrations})
	if err != nil {
		return err
	}
	var trig *trigger.Trigger
	if !cfg.DisableTrigger {
		trig, err = trigger.New(dyn, res, factory, svms, trigger.Config{
			PollInterval: cfg.PollInterval, StalenessWindow: cfg.StalenessWindow, RetryFailedAfter: cfg.RetryFailedAfter,
			HistoryLimit: cfg.HistoryLimit, IgnoredResources: cfg.IgnoredResources, NoStorageVersions: cfg.NoStorageVersions, Metrics: runtime,
		})
		if err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	synced := []cache.InformerSynced{svms.HasSynced}
	if trig != nil {
		synced = append(synced, trig.HasSynced)
	}
	logger.V(4).Info("Waiting for the caches")
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	logger.V(4).Info("Caches synced")
	var wg sync.WaitGroup
	wg.Go(func() { _ = ctrl.Run(ctx) })
	if trig != nil {
		wg.Go(func() { _ = trig.Run(ctx) })
	}
	wg.Wait()
	return nil
}
