package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/discovery"
	"github.com/concordproject/concord/migration/migrator"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/retry"
	"github.com/concordproject/concord/wire"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// errAborted means the migration ended (or vanished) under the migrator: someone else
// marked it terminal or deleted it.
var errAborted = errors.New("the migration was ended by someone else")

// maxFailureEvents bounds the Events emitted per migration for failed objects.
const maxFailureEvents = 10

// Controller runs StorageVersionMigrations: every migration that is not terminal is
// run to its end by one worker of the reconcile runtime, its progress and checkpoint
// written to its status after every page. A migration marked terminal or deleted
// while it runs is stopped.
type Controller struct {
	dyn      dynamic.Interface
	res      *discovery.Resources
	mig      *migrator.Migrator
	informer cache.SharedIndexInformer
	ctrl     *reconcile.Controller[string]
	recorder events.EventRecorder
	metrics  *Metrics
	// progressInAnnotation: the API drops status.progress (Config).
	progressInAnnotation bool

	mu      sync.Mutex
	running map[string]running
	// ended holds, by name, the migrations this controller ended, at the
	// resourceVersion it wrote the end: until the informer has seen that write, its
	// cache shows the migration still running, and must not run it again.
	ended map[string]endWrite
}

type running struct {
	uid    types.UID
	cancel context.CancelCauseFunc
}

type endWrite struct {
	uid types.UID
	rv  int64
}

// Config is what a Controller works with.
type Config struct {
	// Dynamic writes migrations' status, Events' subjects and definitions' status.
	Dynamic dynamic.Interface
	// Resources resolves the version a migration lists and writes.
	Resources *discovery.Resources
	// Migrator rewrites the objects.
	Migrator *migrator.Migrator
	// Informer follows the StorageVersionMigrations.
	Informer cache.SharedIndexInformer
	// Recorder emits the Events (reconcile.NewRecorder).
	Recorder events.EventRecorder
	// Metrics are the migration metrics (NewMetrics); Runtime the reconcile runtime's.
	Metrics *Metrics
	Runtime *reconcile.Metrics
	// Workers is how many migrations run at once.
	Workers int
	// ProgressInAnnotation writes each migration's progress and checkpoint in its
	// AnnotationProgress annotation instead of status.progress, which the API drops
	// (Kubernetes' built-in API keeps only conditions and resourceVersion): no field
	// the server does not keep is written.
	ProgressInAnnotation bool
}

// New returns a controller of the migrations of cfg.Informer.
func New(cfg Config) (*Controller, error) {
	c := &Controller{
		dyn: cfg.Dynamic, res: cfg.Resources, mig: cfg.Migrator, informer: cfg.Informer, recorder: cfg.Recorder, metrics: cfg.Metrics,
		progressInAnnotation: cfg.ProgressInAnnotation, running: map[string]running{}, ended: map[string]endWrite{},
	}
	c.ctrl = reconcile.New("storage-migration", reconcile.Reconciler[string](c), reconcile.Options[string]{
		Workers: cfg.Workers,
		Backoff: reconcile.Backoff{Base: time.Second, Max: 5 * time.Minute},
		Metrics: cfg.Runtime,
	})
	informer := cfg.Informer
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.observe(obj) },
		UpdateFunc: func(_, obj interface{}) { c.observe(obj) },
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				c.stop(u.GetName(), "", fmt.Errorf("%w: deleted", errAborted))
			}
		},
	})
	return c, err
}

// observe queues a migration, and stops it if it runs here and has become terminal
// or was replaced by another object of the same name.
func (c *Controller) observe(obj interface{}) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	m, err := migrationapi.MigrationFrom(u)
	if err != nil {
		return
	}
	if m.Terminal() {
		c.stop(m.Name, "", fmt.Errorf("%w: %s", errAborted, m.Phase()))
		return
	}
	c.stop(m.Name, m.UID, fmt.Errorf("%w: replaced", errAborted))
	c.ctrl.Add(m.Name)
}

// stop cancels the run of migration name, unless it runs for the object keep.
func (c *Controller) stop(name string, keep types.UID, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.running[name]; ok && (keep == "" || r.uid != keep) {
		r.cancel(cause)
	}
}

// Run runs migrations until ctx is done, and returns once every worker has stopped.
func (c *Controller) Run(ctx context.Context) error { return c.ctrl.Run(ctx) }

// Reconcile runs migration name if it has not ended. An error means it stopped for a
// reason that may pass: it is retried from its checkpoint.
func (c *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	obj, exists, err := c.informer.GetIndexer().GetByKey(name)
	if err != nil || !exists {
		c.endSeen(name)
		return reconcile.Result{}, err
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	m, err := migrationapi.MigrationFrom(u)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("undecodable migration: %w", err))
	}
	if m.Terminal() {
		c.endSeen(name)
		return reconcile.Result{}, nil
	}
	if ctx.Err() != nil || c.endedAfter(u) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, c.migrate(ctx, u, m)
}

// endedAfter reports whether this controller ended the migration cached as u at a
// later resourceVersion than u's: the informer brings the end, and its event the next
// Reconcile.
func (c *Controller) endedAfter(u *unstructured.Unstructured) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.ended[u.GetName()]
	if !ok {
		return false
	}
	rv, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	if e.uid != u.GetUID() || err != nil || rv >= e.rv {
		delete(c.ended, u.GetName())
		return false
	}
	return true
}

// wroteEnd records that this controller wrote the end of migration u (as written).
func (c *Controller) wroteEnd(u *unstructured.Unstructured) {
	rv, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.ended[u.GetName()] = endWrite{uid: u.GetUID(), rv: rv}
	c.mu.Unlock()
}

// endSeen forgets the end of migration name: the informer has seen it, or the
// migration is gone.
func (c *Controller) endSeen(name string) {
	c.mu.Lock()
	delete(c.ended, name)
	c.mu.Unlock()
}

// migrate runs one migration to its end.
func (c *Controller) migrate(ctx context.Context, u *unstructured.Unstructured, m *migrationapi.StorageVersionMigration) error {
	gr := schema.GroupResource{Group: m.Spec.Resource.Group, Resource: m.Spec.Resource.Resource}
	label := migrationapi.StorageStateName(gr)
	parent := klog.NewContext(ctx, klog.FromContext(ctx).WithValues("migration", m.Name, "resource", label))
	// ctx is cancelled when the migration ends under the migrator; parent carries the
	// writes that end it (which cancel ctx as soon as the informer sees them).
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	defer c.track(m, cancel)()

	w := &statusWriter{dyn: c.dyn, obj: u, uid: m.UID, inAnnotation: c.progressInAnnotation}
	info, p, cp, err := c.start(ctx, w, m, gr)
	if err != nil || p == nil {
		return err
	}
	failureEvents := 0
	// The trigger records the StorageVersion it started the migration for: rewrites are
	// held to it (a migration created by hand, without it, is not).
	target := migrator.Resource{GroupVersionResource: info.GVR, Namespaced: info.Namespaced,
		StorageVersion: m.Annotations[migrationapi.AnnotationStorageVersionResourceVersion]}
	final, err := c.mig.Migrate(ctx, target, cp, func(ctx context.Context, r migrator.PageReport) error {
		c.metrics.page(label, r)
		for _, f := range r.Failures {
			if failureEvents++; failureEvents <= maxFailureEvents {
				// The object is the Event's related object: Events that differ only
				// in their note would otherwise be merged into one series.
				c.recorder.Eventf(w.obj, failedObject(info, f), "Warning", EventObjectFailed, "Migrate",
					"%s could not be rewritten in the storage version: %s", cache.NewObjectName(f.Namespace, f.Name), f.Reason)
			}
		}
		return w.update(ctx, func(st *migrationapi.MigrationStatus) {
			progressInto(p, r.Checkpoint)
			st.Progress = p
			// Set once, and only to what the server accepts: it never changes after.
			if st.ResourceVersion == "" && migrationapi.WellFormedResourceVersion(r.Checkpoint.ResourceVersion) {
				st.ResourceVersion = r.Checkpoint.ResourceVersion
			}
			setRunning(st, m.Generation, r.Checkpoint)
		})
	})
	c.metrics.remaining.WithLabelValues(label).Set(0)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, errAborted) {
			return c.interrupted(ctx, err)
		}
		if errors.Is(err, migrator.ErrStorageVersionChanged) {
			// Moved: the annotation's update queues the migration again, and it goes on
			// from its checkpoint, held to the newer resourceVersion.
			if moved, err := c.carry(parent, w, m, info.Kind, gr); moved || err != nil {
				return err
			}
			reason, message := c.storageVersionChanged(parent, gr, p.Path, err)
			return c.end(parent, w, m, p, reason, message)
		}
		if transientError(err) {
			return err
		}
		return c.end(ctx, w, m, p, migrationapi.ReasonMigrationError, err.Error())
	}
	progressInto(p, final)
	return c.finish(ctx, parent, w, m, p, gr, info.Kind, final)
}

// track records that migration m runs here, so that a change of it seen by the
// informer can stop it; the returned function forgets it.
func (c *Controller) track(m *migrationapi.StorageVersionMigration, cancel context.CancelCauseFunc) func() {
	c.mu.Lock()
	c.running[m.Name] = running{uid: m.UID, cancel: cancel}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		if r, ok := c.running[m.Name]; ok && r.uid == m.UID {
			delete(c.running, m.Name)
		}
		c.mu.Unlock()
	}
}

// start resolves the resource a migration names and writes it Running, with its
// progress and checkpoint (resumed from its status). A nil progress with no error
// means the migration has ended here (the resource cannot be migrated).
func (c *Controller) start(ctx context.Context, w *statusWriter, m *migrationapi.StorageVersionMigration, gr schema.GroupResource) (discovery.Info, *migrationapi.Progress, migrator.Checkpoint, error) {
	logger := klog.FromContext(ctx)
	info, ok, err := c.res.Lookup(ctx, gr, time.Minute)
	if err != nil {
		return info, nil, migrator.Checkpoint{}, err
	}
	reason := ""
	switch {
	case gr.Resource == "":
		reason = "spec.resource.resource is empty"
	case !ok:
		reason = fmt.Sprintf("the server does not serve %s", gr)
	case !info.Migratable:
		reason = fmt.Sprintf("%s cannot be listed and updated", gr)
	}
	if reason != "" {
		return info, nil, migrator.Checkpoint{}, c.end(ctx, w, m, nil, migrationapi.ReasonMigrationError, reason)
	}
	p := ProgressOf(w.obj)
	if p == nil {
		p = &migrationapi.Progress{}
	}
	if p.StorageVersionHash == "" {
		p.StorageVersionHash = m.Annotations[migrationapi.AnnotationStorageVersionHash]
		if p.StorageVersionHash == "" {
			p.StorageVersionHash = info.Hash
		}
	}
	if p.StartTime == nil {
		now := metav1.Now()
		p.StartTime = &now
	}
	cp := checkpointFrom(p, m.Status.ResourceVersion)
	if cp.Path == "" && cp.Done() == 0 {
		logger.Info("Migration started", "version", info.GVR.Version)
	} else {
		logger.Info("Migration resumed", "path", cp.Path, "migrated", cp.Migrated, "skipped", cp.Skipped, "failed", cp.Failed)
	}
	if err := w.update(ctx, func(st *migrationapi.MigrationStatus) { st.Progress = p; setRunning(st, m.Generation, cp) }); err != nil {
		return info, nil, cp, c.interrupted(ctx, err)
	}
	return info, p, cp, nil
}

// finish ends a migration whose objects have all been through the migrator: it counts
// only if the resource's StorageVersion object did not change meanwhile (when the
// trigger recorded it) and no object failed; then a custom resource's
// status.storedVersions is trimmed, before Succeeded is written, so that whoever sees
// Succeeded sees the definition trimmed too. parent carries the final writes.
func (c *Controller) finish(ctx, parent context.Context, w *statusWriter, m *migrationapi.StorageVersionMigration, p *migrationapi.Progress, gr schema.GroupResource, kind string, final migrator.Checkpoint) error {
	if rv := m.Annotations[migrationapi.AnnotationStorageVersionResourceVersion]; rv != "" {
		sv, err := c.dyn.Resource(migrationapi.StorageVersions).Get(parent, wire.StorageVersionName(gr), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return c.end(parent, w, m, p, migrationapi.ReasonStorageVersionChanged, "The resource's StorageVersion object was deleted during the migration.")
		case err != nil:
			return err
		case sv.GetResourceVersion() != rv:
			// Every page was written under the older resourceVersion; the migration
			// counts if every revision since agreed on its version.
			moved, err := c.carry(parent, w, m, kind, gr)
			if err != nil {
				return err
			}
			if !moved {
				return c.end(parent, w, m, p, migrationapi.ReasonStorageVersionChanged, fmt.Sprintf(
					"The resource's StorageVersion object changed during the migration (resourceVersion %s, then %s): the migration does not count; a new one replaces it.",
					rv, sv.GetResourceVersion()))
			}
		}
	}
	if final.Failed > 0 {
		return c.end(parent, w, m, p, migrationapi.ReasonObjectsFailed, failedMessage(final))
	}
	if err := c.trimStoredVersions(ctx, gr, p.StorageVersionHash, w.obj); err != nil {
		if ctx.Err() != nil {
			return c.interrupted(ctx, err)
		}
		klog.FromContext(ctx).Error(err, "Could not trim the definition's status.storedVersions")
	}
	return c.end(parent, w, m, p, migrationapi.ReasonMigrationCompleted, "")
}

// interrupted ends a run stopped by ctx or by someone ending the migration: nothing
// to retry.
func (c *Controller) interrupted(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = err
	}
	if errors.Is(err, errAborted) || errors.Is(cause, errAborted) || ctx.Err() != nil {
		klog.FromContext(ctx).Info("Migration stopped", "reason", cause)
		return nil
	}
	return err
}

// end writes the terminal conditions in one status write: Running False, and
// Succeeded for ReasonMigrationCompleted or Failed with reason and message otherwise
// (the API refuses Running True beside either). The message is cut to the length the
// API accepts. It emits an Event and records the metrics.
func (c *Controller) end(ctx context.Context, w *statusWriter, m *migrationapi.StorageVersionMigration, p *migrationapi.Progress, reason, message string) error {
	now := metav1.Now()
	succeeded := reason == migrationapi.ReasonMigrationCompleted
	if p != nil {
		p.Continue = ""
		p.CompletionTime = &now
		if succeeded {
			message = fmt.Sprintf("%d objects migrated, %d already current or changed meanwhile", p.Migrated, p.Skipped)
		}
	}
	message = migrationapi.ConditionMessage(message)
	err := w.update(ctx, func(st *migrationapi.MigrationStatus) {
		if p != nil {
			st.Progress = p
		}
		runningMsg := "The migration has ended."
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: migrationapi.ConditionRunning, Status: metav1.ConditionFalse,
			Reason: reason, Message: runningMsg, ObservedGeneration: m.Generation})
		cond := metav1.Condition{Type: migrationapi.ConditionFailed, Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: m.Generation}
		if succeeded {
			cond.Type = migrationapi.ConditionSucceeded
		}
		meta.SetStatusCondition(&st.Conditions, cond)
	})
	if err != nil {
		return c.interrupted(ctx, err)
	}
	c.wroteEnd(w.obj)
	label := migrationapi.StorageStateName(schema.GroupResource{Group: m.Spec.Resource.Group, Resource: m.Spec.Resource.Resource})
	result := "failed"
	switch {
	case succeeded:
		result = "succeeded"
		c.recorder.Eventf(w.obj, nil, "Normal", EventMigrationSucceeded, "Migrate", "%s", message)
	case reason == migrationapi.ReasonStorageVersionChanged:
		result = "aborted"
		c.recorder.Eventf(w.obj, nil, "Warning", EventMigrationFailed, "Migrate", "%s", message)
	default:
		c.recorder.Eventf(w.obj, nil, "Warning", EventMigrationFailed, "Migrate", "%s", message)
	}
	c.metrics.migrations.WithLabelValues(label, result).Inc()
	if p != nil && p.StartTime != nil {
		c.metrics.duration.WithLabelValues(label, result).Observe(now.Sub(p.StartTime.Time).Seconds())
	}
	klog.FromContext(ctx).Info("Migration ended", "result", result, "reason", reason, "message", message)
	return nil
}

// trimStoredVersions sets status.storedVersions of the definition of gr, if it is a
// custom resource, to its storage version alone, provided that is still the version
// the migration rewrote objects in (hash).
func (c *Controller) trimStoredVersions(ctx context.Context, gr schema.GroupResource, hash string, regarding runtime.Object) error {
	if gr.Group == "" || hash == "" {
		return nil
	}
	crds := c.dyn.Resource(migrationapi.CustomResourceDefinitions)
	name := gr.Resource + "." + gr.Group
	var trimmed []string
	err := retry.OnConflict(ctx, func(ctx context.Context) error {
		u, err := crds.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return err
		}
		storage := ""
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage = v.Name
			}
		}
		if storage == "" || wire.StorageVersionHash(gr.Group, storage, crd.Spec.Names.Kind) != hash {
			klog.FromContext(ctx).Info("The definition's storage version changed during the migration; status.storedVersions kept", "crd", name)
			return nil
		}
		if slices.Equal(crd.Status.StoredVersions, []string{storage}) {
			return nil
		}
		if err := unstructured.SetNestedStringSlice(u.Object, []string{storage}, "status", "storedVersions"); err != nil {
			return err
		}
		if _, err := crds.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: migrationapi.FieldManager}); err != nil {
			return err
		}
		trimmed = crd.Status.StoredVersions
		return nil
	})
	if err == nil && trimmed != nil {
		c.recorder.Eventf(regarding, nil, "Normal", EventStoredVersions, "Migrate",
			"status.storedVersions of %s trimmed from %v to its storage version", name, trimmed)
	}
	return err
}

// transientError reports whether a migration stopped by err may succeed later
// (retries exhausted on throttling or server errors, a status write that failed).
func transientError(err error) bool {
	if errors.Is(err, migrator.ErrGaveUp) {
		return true
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		return code == 429 || code >= 500
	}
	return false
}

// setRunning sets the Running condition, its message mirroring the progress (it
// survives where status.progress is pruned: Kubernetes' own API).
func setRunning(st *migrationapi.MigrationStatus, generation int64, cp migrator.Checkpoint) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: migrationapi.ConditionRunning, Status: metav1.ConditionTrue,
		Reason: migrationapi.ReasonMigrationRunning, Message: progressMessage(cp), ObservedGeneration: generation})
}

// progressMessage describes a checkpoint in one sentence.
func progressMessage(cp migrator.Checkpoint) string {
	of := ""
	if cp.Total != nil {
		of = fmt.Sprintf(" of about %d", *cp.Total)
	}
	path := ""
	if cp.Path != "" {
		path = fmt.Sprintf(" (%s path)", cp.Path)
	}
	return fmt.Sprintf("%d objects migrated, %d skipped, %d failed%s%s", cp.Migrated, cp.Skipped, cp.Failed, of, path)
}

// storageVersionChanged returns the reason and message of the end of a migration of
// gr that the migrator stopped with migrator.ErrStorageVersionChanged (err) on path:
// ReasonStorageVersionsDisagree if the servers now disagree on the encoding version
// (the StorageVersion object has no common one: a rolling upgrade or a rollback is
// under way), the reason the trigger gives the same event, else
// ReasonStorageVersionChanged.
func (c *Controller) storageVersionChanged(ctx context.Context, gr schema.GroupResource, path string, err error) (reason, message string) {
	held := "no object was rewritten after the change (the server held its rewrites to it)"
	if path == migrationapi.PathClient {
		held = "no page of objects was rewritten after the change was seen"
	}
	reason, why := migrationapi.ReasonStorageVersionChanged, ""
	sv, gerr := c.dyn.Resource(migrationapi.StorageVersions).Get(ctx, wire.StorageVersionName(gr), metav1.GetOptions{})
	if gerr == nil {
		if common, _, _ := unstructured.NestedString(sv.Object, "status", "commonEncodingVersion"); common == "" {
			reason, why = migrationapi.ReasonStorageVersionsDisagree, " The API servers no longer agree on an encoding version; a migration starts once they do."
		}
	}
	return reason, fmt.Sprintf("Stopped: %v; %s.%s A new migration replaces this one.", err, held, why)
}

// failedMessage is the Failed condition's message of a migration with failed objects.
func failedMessage(cp migrator.Checkpoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d objects could not be rewritten and may still be encoded in an older version (%d migrated, %d skipped)", cp.Failed, cp.Migrated, cp.Skipped)
	for i, f := range cp.Failures {
		if i == 3 {
			b.WriteString("; ...")
			break
		}
		fmt.Fprintf(&b, "; %s: %s", cache.NewObjectName(f.Namespace, f.Name), f.Reason)
	}
	return b.String()
}

// checkpointFrom reads a migrator checkpoint from a migration's progress.
func checkpointFrom(p *migrationapi.Progress, rv string) migrator.Checkpoint {
	cp := migrator.Checkpoint{
		Path:            p.Path,
		Continue:        p.Continue,
		ResourceVersion: rv,
		Total:           p.Total,
		Counts:          migrator.Counts{Migrated: p.Migrated, Skipped: p.Skipped, Failed: p.Failed},
	}
	for _, f := range p.Failures {
		cp.Failures = append(cp.Failures, migrator.Failure{Namespace: f.Namespace, Name: f.Name, Reason: f.Reason})
	}
	return cp
}

// progressInto copies a checkpoint into a migration's progress.
func progressInto(p *migrationapi.Progress, cp migrator.Checkpoint) {
	p.Path, p.Continue, p.Total = cp.Path, cp.Continue, cp.Total
	p.Migrated, p.Skipped, p.Failed = cp.Migrated, cp.Skipped, cp.Failed
	p.Failures = p.Failures[:0]
	for _, f := range cp.Failures {
		p.Failures = append(p.Failures, migrationapi.ObjectFailure{Namespace: f.Namespace, Name: f.Name, Reason: f.Reason})
	}
}

// failedObject is a reference to the object f names, for an Event's related object.
func failedObject(info discovery.Info, f migrator.Failure) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(info.GVR.GroupVersion().WithKind(info.Kind))
	u.SetNamespace(f.Namespace)
	u.SetName(f.Name)
	return u
}
