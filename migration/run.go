package migration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// PollInterval is how often discovery is read and every StorageState looked at
	// (default 1m). StorageVersion objects are watched, not polled. A state's heartbeat
	// is renewed once it is older than trigger.HeartbeatInterval: a quarter of
	// StalenessWindow, or PollInterval if that is longer.
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
	// does not serve it, the StorageVersionMigration one) at start, nor install or
	// delete the StorageVersionMigration one as the server's API comes and goes.
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
// once with leader election disabled), the trigger and the migration controller, on
// the StorageVersionMigration API the server serves, following it as it comes and
// goes (a Kubernetes rolled back to a release without it, or given it again: see
// follower). It returns nil when ctx is done, an error only for an invalid cfg.
// Losing the lease stops the controllers, waits for them, and stands again.
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
	// The controllers' and the election's requests tell the follower when they reach
	// no server; the follower's own do not (it would chase its own failures).
	lost := &serverLost{}
	kept := &keptAPIService{}
	watched := rest.CopyConfig(restCfg)
	watched.Wrap(lost.wrap)

	if !installAtStart(ctx, cfg) {
		return nil // ctx done
	}
	if cfg.LeaderElection.Disabled {
		return follow(ctx, cfg, watched, m, lost, kept)
	}
	cs, err := kubernetes.NewForConfig(watched)
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
		if err := follow(ctx, cfg, watched, m, lost, kept); err != nil {
			logger.Error(err, "Storage-migration controllers failed")
		}
		logger.Info("Storage-migration controllers stopped", "identity", le.Identity)
	})
}

// installAtStart installs the definitions (EnsureCRDs; nothing with cfg.SkipCRDs),
// retried through the reconcile runtime until they are, telling cfg.Installed the
// outcome of each attempt. It returns false if ctx ended first.
func installAtStart(ctx context.Context, cfg Config) bool {
	if cfg.SkipCRDs {
		if cfg.Installed != nil {
			cfg.Installed(nil)
		}
		return true
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	installed := false
	install := func(ctx context.Context, _ string) (reconcile.Result, error) {
		err := EnsureCRDs(ctx, cfg.RESTConfig)
		if ctx.Err() != nil {
			return reconcile.Result{}, nil // stopping
		}
		if cfg.Installed != nil {
			cfg.Installed(err)
		}
		if err != nil {
			klog.FromContext(ctx).Error(err, "Installing the storage-migration definitions; retrying")
			return reconcile.Result{}, err
		}
		installed = true
		stop()
		return reconcile.Result{}, nil
	}
	c := reconcile.New("storage-migration-definitions", reconcile.Func[string](install), reconcile.Options[string]{
		Backoff: reconcile.Backoff{Base: time.Second, Max: 30 * time.Second},
		Metrics: reconcile.NewMetrics(cfg.Metrics),
	})
	c.Add(followerKey)
	_ = c.Run(runCtx) // its worker is joined: installed is read after its last write
	return installed
}

// followerKey is the one key of the follower's (and the installer's) queue.
const followerKey = "storageversionmigrations"

// follow runs the controllers against the StorageVersionMigration API the server
// serves, following it as it comes and goes (see follower), until ctx is done and
// they have stopped. The follower talks to the server with cfg.RESTConfig, the
// controllers with watched, whose requests that reach no server lost reports.
func follow(ctx context.Context, cfg Config, watched *rest.Config, m *controller.Metrics, lost *serverLost, kept *keptAPIService) error {
	f, err := newFollower(cfg, watched, m, kept)
	if err != nil {
		return err
	}
	f.logger = klog.FromContext(ctx)
	lost.set(f.interrupt)
	defer lost.set(nil)
	f.ctrl.Add(followerKey)
	err = f.ctrl.Run(ctx)
	f.stopControllers()
	return err
}

// serverLost is told when a request reaches no server (refused, reset, cut short):
// the API server may be restarting, maybe as another release that serves another
// StorageVersionMigration API, or none.
type serverLost struct {
	mu     sync.Mutex
	notify func()
}

// set makes notify (nil: nothing) what a lost request calls.
func (s *serverLost) set(notify func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = notify
}

// wrap is a rest.Config's transport wrapper that reports lost requests to s.
func (s *serverLost) wrap(rt http.RoundTripper) http.RoundTripper {
	return &lostTransport{rt: rt, lost: s}
}

// lostTransport reports to lost each request that got no answer while its caller
// still waited for one.
type lostTransport struct {
	rt   http.RoundTripper
	lost *serverLost
}

func (t *lostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err != nil && r.Context().Err() == nil {
		t.lost.mu.Lock()
		notify := t.lost.notify
		t.lost.mu.Unlock()
		if notify != nil {
			notify()
		}
	}
	return resp, err
}

// WrappedRoundTripper lets utilnet.CloseIdleConnectionsFor reach the transport.
func (t *lostTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

// follower keeps the migration controllers running against the StorageVersionMigration
// API the server serves now, which can change while they run: a Kubernetes rolled back
// to (or emulating) a release without the built-in API, or given it again. It probes
// the API (discovery.ProbeMigrationAPI) every PollInterval, and at once when the
// controllers' informer of migrations cannot list them (the API is gone) or when a
// request of theirs reaches no server (the server is restarting, maybe as another
// release: the controllers are stopped at once, see interrupt); then:
//
//   - nothing serves it: Concord's definition is installed (unless SkipCRDs), and the
//     controllers run on it;
//   - a built-in API serves it while Concord's definition is installed: the built-in
//     API shadows the definition, which is deleted, and with it the migrations
//     recorded in it; the trigger's migrations the built-in API kept from before it
//     went away are deleted too (a success among them says nothing of the objects
//     written since, and the trigger would take it for one);
//   - the API is not the one the controllers were started on, or they were
//     interrupted: they are started again on the API as it is now, their progress
//     written where that API keeps it (controller.Config.ProgressInAnnotation).
//
// A probe that fails (the server is down) stops the controllers and is retried with
// backoff by the reconcile runtime. The controllers are never restarted but for
// these reasons: a watch that ends, or a restart of the server that comes back
// serving the same API, only costs them a resumption from their checkpoints.
type follower struct {
	cfg     Config
	watched *rest.Config // the controllers' (Config.RESTConfig is the follower's)
	metrics *controller.Metrics
	disc    clientdiscovery.DiscoveryInterface
	crds    apiextensionsclient.Interface
	dyn     dynamic.Interface
	ctrl    *reconcile.Controller[string]

	logger klog.Logger
	// api is what the controllers run on ("" before the first probe, and while it is
	// unknown): the follower's one worker alone touches it.
	api discovery.MigrationAPI
	// kept is the built-in API's APIService as it was before a follower deleted the
	// definition that shadowed it (apiservice.go): put back once if kube-apiserver
	// removes it after all, in this term of leadership or a later one. The worker alone
	// touches it (terms run one at a time).
	kept *keptAPIService
	// settling, while not nil, is the wait after the follower deleted a shadowed
	// definition (apiservice.go): the next reconciles step it before they probe. The
	// worker alone touches it.
	settling *settling

	// The controllers running now, if any: the worker starts and stops them;
	// interrupt cancels them from any goroutine.
	mu          sync.Mutex
	cancel      context.CancelFunc
	done        chan struct{} // closed once the controllers have stopped
	interrupted bool
}

func newFollower(cfg Config, watched *rest.Config, m *controller.Metrics, kept *keptAPIService) (*follower, error) {
	disc, err := clientdiscovery.NewDiscoveryClientForConfig(cfg.RESTConfig)
	if err != nil {
		return nil, err
	}
	crds, err := apiextensionsclient.NewForConfig(cfg.RESTConfig)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg.RESTConfig)
	if err != nil {
		return nil, err
	}
	f := &follower{cfg: cfg, watched: watched, metrics: m, disc: disc, crds: crds, dyn: dyn, kept: kept}
	f.ctrl = reconcile.New("storage-migration-api", reconcile.Reconciler[string](f), reconcile.Options[string]{
		Backoff: reconcile.Backoff{Base: 200 * time.Millisecond, Max: min(30*time.Second, cfg.PollInterval)},
		Metrics: reconcile.NewMetrics(cfg.Metrics),
	})
	return f, nil
}

// Reconcile probes the API, brings the definitions in line with it, and (re)starts the
// controllers if the API is not the one they run on (or they stopped).
func (f *follower) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	if s := f.settling; s != nil {
		done, err := s.step(ctx, f)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("keeping the built-in StorageVersionMigration API registered: %w", err)
		}
		if !done {
			return reconcile.Result{RequeueAfter: settlePoll}, nil
		}
		f.settling = nil
	}
	api, err := f.serve(ctx)
	if err != nil {
		// What the server serves is unknown (it may be restarting into another
		// release): the controllers must not act on what comes back before it is
		// known.
		if f.api != "" {
			klog.FromContext(ctx).Info("The StorageVersionMigration API cannot be probed; the controllers wait until it can", "err", err)
		}
		f.stopControllers()
		f.api = ""
		return reconcile.Result{}, err
	}
	if f.settling != nil {
		// A shadowed definition was just deleted: the next probe decides, once it
		// has settled.
		return reconcile.Result{RequeueAfter: settlePoll}, nil
	}
	if api != f.api || f.stale() {
		f.restart(ctx, api)
	}
	return reconcile.Result{RequeueAfter: f.cfg.PollInterval}, nil
}

// serve probes the API and brings Concord's definition in line with it: installed
// where nothing serves the API, deleted where a built-in API shadows it. It returns the
// API as it is then.
func (f *follower) serve(ctx context.Context) (discovery.MigrationAPI, error) {
	logger := klog.FromContext(ctx)
	api, err := discovery.ProbeMigrationAPI(ctx, f.disc)
	if err != nil || f.cfg.SkipCRDs {
		return api, err
	}
	switch api {
	case discovery.MigrationAPINotServed:
		if keep := f.kept.service; keep != nil {
			f.kept.service = nil // once: a release without the built-in API gets the definition next
			if restored, err := restoreAPIService(ctx, f.dyn, keep); err != nil || restored {
				return discovery.MigrationAPINotServed, err // the next probe looks again
			}
		}
		if err := ensureCRD(ctx, f.crds, f.dyn, migrationapi.StorageVersionMigrationCRD()); err != nil {
			return api, fmt.Errorf("installing the StorageVersionMigration definition: %w", err)
		}
		logger.Info("No StorageVersionMigration API was served: Concord's definition is installed")
		return discovery.ProbeMigrationAPI(ctx, f.disc)
	case discovery.MigrationAPIBuiltIn:
		crd, err := shadowedMigrationCRD(ctx, f.crds)
		if err != nil || crd == nil {
			return api, err
		}
		// The built-in API's migrations are from before it went away: a success among
		// them proves nothing of the objects written since. The trigger's go first,
		// so that it starts again from what its StorageStates say.
		keep, err := builtInAPIService(ctx, f.dyn)
		if err != nil {
			return api, fmt.Errorf("reading the built-in StorageVersionMigration API's APIService: %w", err)
		}
		stale, err := deleteTriggeredMigrations(ctx, f.dyn)
		if err != nil {
			return api, fmt.Errorf("deleting the migrations the built-in API kept from before: %w", err)
		}
		if err := deleteMigrationCRD(ctx, f.crds, crd); err != nil {
			return api, fmt.Errorf("deleting the shadowed StorageVersionMigration definition: %w", err)
		}
		logger.Info("A built-in StorageVersionMigration API is served again: Concord's definition, which it shadows, is deleted with the migrations recorded in it; the trigger's migrations the built-in API kept from before are deleted", "stale", stale)
		if keep != nil {
			f.kept.service = keep
			f.settling = &settling{crd: crd.Name, keep: keep, deadline: time.Now().Add(settleTimeout)}
		}
	}
	return api, nil
}

// deleteTriggeredMigrations deletes every migration the trigger created (it carries
// migrationapi.AnnotationStorageVersionHash) and returns how many it deleted. Others'
// migrations are left alone.
func deleteTriggeredMigrations(ctx context.Context, dyn dynamic.Interface) (int, error) {
	client := dyn.Resource(migrationapi.StorageVersionMigrations)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range list.Items {
		if _, ok := m.GetAnnotations()[migrationapi.AnnotationStorageVersionHash]; !ok {
			continue
		}
		uid := m.GetUID()
		err := client.Delete(ctx, m.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case err == nil:
			n++
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			return n, err
		}
	}
	return n, nil
}

// restart stops the controllers and starts them again on api (not at all if it is
// not served).
func (f *follower) restart(ctx context.Context, api discovery.MigrationAPI) {
	logger := klog.FromContext(ctx)
	f.stopControllers()
	if f.api != "" && f.api != api {
		logger.Info("The StorageVersionMigration API changed; the controllers follow it", "from", f.api, "to", api)
	}
	f.api = api
	if api == discovery.MigrationAPINotServed {
		logger.Info("No StorageVersionMigration API is served; the controllers wait for one")
		return
	}
	gctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	f.mu.Lock()
	f.cancel, f.done = cancel, done
	f.mu.Unlock()
	gen := generation{progressInAnnotation: !api.KeepsProgress(), listFailed: f.listFailed}
	cfg := f.cfg
	cfg.RESTConfig = f.watched
	go func() {
		defer close(done)
		if err := runControllers(gctx, cfg, f.metrics, gen); err != nil {
			logger.Error(err, "Storage-migration controllers failed")
		}
	}()
}

// interrupt stops the controllers at once, without waiting for them, and has the API
// probed: a request of theirs reached no server, which may be restarting into a
// release that serves another StorageVersionMigration API (or none), and they must
// not act on what it serves until that is known. A migration interrupted so resumes
// from its checkpoint once they run again.
func (f *follower) interrupt() {
	f.mu.Lock()
	running := f.cancel != nil && !f.interrupted
	if running {
		f.cancel()
		f.interrupted = true
	}
	f.mu.Unlock()
	if running {
		f.logger.Info("A request reached no API server; the controllers stop until the StorageVersionMigration API is probed again")
	}
	f.ctrl.Add(followerKey)
}

// stale reports whether the controllers started last were interrupted or stopped by
// themselves.
func (f *follower) stale() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done == nil {
		return false
	}
	select {
	case <-f.done:
		return true
	default:
		return f.interrupted
	}
}

// stopControllers stops the controllers, if they run, and waits for them.
func (f *follower) stopControllers() {
	f.mu.Lock()
	cancel, done := f.cancel, f.done
	f.cancel, f.done, f.interrupted = nil, nil, false
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// listFailed is the informer of migrations' list and watch error handler: it logs err
// as client-go does, but a migration API that is gone only once, and has the API
// probed at once.
func (f *follower) listFailed(ctx context.Context, r *cache.Reflector, err error) {
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("The StorageVersionMigration API is not served any more; probing it", "err", err)
	} else {
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
	f.ctrl.Add(followerKey)
}

// generation is what one run of the controllers is started with.
type generation struct {
	// progressInAnnotation: the API drops status.progress.
	progressInAnnotation bool
	// listFailed handles the informer of migrations' list and watch errors.
	listFailed cache.WatchErrorHandlerWithContext
}

// runControllers runs the controllers until ctx is done and they have stopped.
func runControllers(ctx context.Context, cfg Config, m *controller.Metrics, gen generation) error {
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
	if gen.listFailed != nil {
		if err := svms.SetWatchErrorHandlerWithContext(gen.listFailed); err != nil {
			return err
		}
	}
	ctrl, err := controller.New(controller.Config{Dynamic: dyn, Resources: res, Migrator: mig, Informer: svms,
		Recorder: recorder, Metrics: m, Runtime: runtime, Workers: cfg.Migrations, ProgressInAnnotation: gen.progressInAnnotation})
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
