package trigger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/discovery"
	"github.com/concordproject/concord/migration/guard"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// Reconcile brings the StorageState of gr and its migrations to what plan says, and
// says when to look again if sooner than the next poll. A resource the trigger does
// not migrate keeps no state of the trigger's; a state someone else created for it
// is kept, idle, its Tracked condition saying why.
func (t *Trigger) Reconcile(ctx context.Context, gr schema.GroupResource) (reconcile.Result, error) {
	if gr.Resource == "" {
		return reconcile.Result{}, nil
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("resource", migrationapi.StorageStateName(gr)))
	stateObj, err := t.stateObject(gr)
	if err != nil {
		return reconcile.Result{}, err
	}
	if slices.Contains(t.ignored, gr) {
		return reconcile.Result{}, t.keepIdle(ctx, gr, stateObj, idleReason{Reason: migrationapi.ReasonResourceIgnored})
	}
	if !t.res.Synced() {
		return reconcile.Result{RequeueAfter: t.poll}, nil // nothing is known of what the server serves yet
	}
	obs, idle, err := t.observeResource(ctx, gr)
	if err != nil {
		return reconcile.Result{}, err
	}
	if idle != nil {
		return reconcile.Result{}, t.keepIdle(ctx, gr, stateObj, *idle)
	}
	migs, err := t.migrationsOf(gr)
	if err != nil {
		return reconcile.Result{}, err
	}
	if wait := t.expected(gr, migs); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	after, err := t.apply(ctx, gr, stateObj, obs, migs)
	return reconcile.Result{RequeueAfter: after}, err
}

// observeResource makes the observation of gr, from its StorageVersion object if
// there is one, else from discovery. For a resource the trigger does not migrate (not
// served, not persisted, not migratable, or aggregated without StorageVersions) it
// returns why instead.
func (t *Trigger) observeResource(ctx context.Context, gr schema.GroupResource) (observation, *idleReason, error) {
	logger := klog.FromContext(ctx)
	info, known := t.res.Get(gr)
	svObj := t.storageVersionObject(gr)
	if !known && svObj != nil {
		// Servers report a resource that discovery did not list when last read (a
		// definition created since): read discovery again now rather than at the next
		// poll, up to a minute away.
		var err error
		if info, known, err = t.res.Lookup(ctx, gr, time.Second); err != nil {
			return observation{}, nil, err
		}
	}
	// An aggregated API is migrated only if its servers publish StorageVersions: the
	// aggregator cannot know what its backends encode in otherwise (KEP-2339).
	aggregatedOnly := svObj == nil && t.isAggregated(gr.Group)
	var idle *idleReason
	switch {
	case !known:
		idle = &idleReason{Reason: migrationapi.ReasonResourceNotServed, Gone: true}
	case !info.Migratable:
		idle = &idleReason{Reason: migrationapi.ReasonResourceNotMigratable, Gone: true}
	case svObj == nil && info.Hash == "":
		idle = &idleReason{Reason: migrationapi.ReasonResourceNotPersisted}
	case aggregatedOnly:
		idle = &idleReason{Reason: migrationapi.ReasonAggregatedWithoutStorageVersions}
	}
	if idle != nil {
		logger.V(4).Info("Not migrated", "reason", idle.Reason, "storageVersionHash", info.Hash, "storageVersionObject", svObj != nil)
		return observation{}, idle, nil
	}
	obs, err := observe(info, svObj)
	if err != nil {
		logger.Error(err, "Ignoring an undecodable StorageVersion; using discovery")
		obs, _ = observe(info, nil)
	}
	return obs, nil, nil
}

// apply plans the state of gr from what is observed and stored, and carries the plan
// out: the state's status first, then aborts, a launch or adoption, pruning. It
// returns plan's RequeueAfter.
func (t *Trigger) apply(ctx context.Context, gr schema.GroupResource, stateObj *unstructured.Unstructured, obs observation, migs []migrationSummary) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	in := lifecycleInput{Now: t.now(), Observed: obs}
	var state *migrationapi.StorageState
	if stateObj != nil {
		var err error
		if state, err = migrationapi.StateFrom(stateObj); err != nil {
			return 0, err
		}
		in.State = &state.Status
	}
	maxSeq := 0
	for i := range migs {
		m := &migs[i]
		if !m.terminal() {
			in.Active = append(in.Active, *m)
		}
		if !m.Triggered {
			in.Foreign = append(in.Foreign, *m)
		}
		if m.Triggered && (in.Latest == nil || m.Sequence > in.Latest.Sequence) {
			in.Latest = m
		}
		maxSeq = max(maxSeq, sequenceOf(m.Name), m.Sequence) // numbers taken by anyone are skipped
	}
	in.ConsecutiveFailures = consecutiveFailures(migs, obs.Current)
	// A settled state needs no migration, and no read of the object's history.
	settled := in.State != nil && slices.Equal(in.State.PersistedStorageVersionHashes, []string{obs.Current}) &&
		in.Now.Sub(in.State.LastHeartbeatTime.Time) <= t.cfg.Staleness
	if !settled {
		in.Carried = t.carried(ctx, gr, obs, in.Latest)
	}
	out := plan(in, t.cfg)
	if t.setTracked(&out.Status, gr) {
		out.WriteStatus = true
	}
	logger.V(4).Info("Storage state planned", "observed", obs, "persisted", out.Status.PersistedStorageVersionHashes,
		"current", out.Status.CurrentStorageVersionHash, "launch", out.Launch, "adopt", out.Adopt, "abort", len(out.Abort), "write", out.WriteStatus)
	// The state is written first: its create or resourceVersion-checked update fails
	// when the cache it was planned from is behind, and nothing is then launched or
	// aborted on that stale view (a reconcile right after the state's creation would
	// otherwise see no state, reset, and abort the migration just launched). Whatever
	// follows is planned again from the written state if it fails.
	if out.WriteStatus {
		if err := t.writeState(ctx, gr, stateObj, out.Status); err != nil {
			return 0, err
		}
	}
	for _, a := range out.Abort {
		if err := t.abort(ctx, a); err != nil {
			return 0, err
		}
	}
	if out.Launch {
		if err := t.launch(ctx, gr, obs, maxSeq+1); err != nil {
			return 0, err
		}
	}
	if out.Adopt != "" {
		if err := t.adopt(ctx, gr, obs, out.Adopt, maxSeq+1); err != nil {
			return 0, err
		}
	}
	if err := t.prune(ctx, migs); err != nil {
		logger.Error(err, "Could not delete old migrations")
	}
	if out.Reset && stateObj != nil {
		logger.Info("Storage state stale; reset to Unknown", "lastHeartbeat", state.Status.LastHeartbeatTime)
	}
	return out.RequeueAfter, nil
}

// observe makes the observation of a resource from its StorageVersion object (nil:
// from discovery).
func observe(info discovery.Info, sv *unstructured.Unstructured) (observation, error) {
	if sv == nil {
		return observation{Agreed: true, Current: info.Hash, Reported: []string{info.Hash}}, nil
	}
	return guard.Observe(info.Kind, sv)
}

// carried says whether latest, a migration to obs.Current started at an older
// resourceVersion of gr's StorageVersion object, still counts: every revision of the
// object since agreed on obs.Current. A history that cannot be read says no, and the
// migration is replaced, as for any other change.
func (t *Trigger) carried(ctx context.Context, gr schema.GroupResource, obs observation, latest *migrationSummary) bool {
	if latest == nil || !obs.Agreed || obs.ResourceVersion == "" || latest.Hash != obs.Current ||
		latest.StorageVersionRV == "" || latest.StorageVersionRV == obs.ResourceVersion || latest.Aborted {
		return false
	}
	info, _ := t.res.Get(gr)
	err := guard.Carried(ctx, t.dyn, guard.Change{Resource: gr, Kind: info.Kind, Hash: obs.Current,
		From: latest.StorageVersionRV, To: obs.ResourceVersion})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("The StorageVersion object changed under the latest migration", "migration", latest.Name, "reason", err.Error())
		return false
	}
	return true
}

// consecutiveFailures counts the trigger's latest migrations for hash that failed
// (not aborted), newest first, until one that did not.
func consecutiveFailures(migs []migrationSummary, hash string) int {
	var mine []migrationSummary
	for _, m := range migs {
		if m.Triggered {
			mine = append(mine, m)
		}
	}
	slices.SortFunc(mine, func(a, b migrationSummary) int { return b.Sequence - a.Sequence })
	n := 0
	for _, m := range mine {
		if m.Hash != hash || m.Phase != migrationapi.ConditionFailed || m.Aborted {
			break
		}
		n++
	}
	return n
}

func (t *Trigger) stateObject(gr schema.GroupResource) (*unstructured.Unstructured, error) {
	obj, ok, err := t.states.GetStore().GetByKey(migrationapi.StorageStateName(gr))
	if err != nil || !ok {
		return nil, err
	}
	return obj.(*unstructured.Unstructured), nil
}

func (t *Trigger) storageVersionObject(gr schema.GroupResource) *unstructured.Unstructured {
	v := t.versionsInformer()
	if v == nil {
		return nil
	}
	obj, ok, err := v.GetStore().GetByKey(wire.StorageVersionName(gr))
	if err != nil || !ok {
		return nil
	}
	return obj.(*unstructured.Unstructured)
}

// migrationsOf returns the summaries of every migration of gr in the cache.
func (t *Trigger) migrationsOf(gr schema.GroupResource) ([]migrationSummary, error) {
	objs, err := t.migrations.GetIndexer().ByIndex(byResource, gr.Group+"/"+gr.Resource)
	if err != nil {
		return nil, err
	}
	out := make([]migrationSummary, 0, len(objs))
	for _, obj := range objs {
		m, err := migrationapi.MigrationFrom(obj.(*unstructured.Unstructured))
		if err != nil {
			continue
		}
		s := summarize(m)
		if !s.Triggered {
			s.Sighting = t.sightingOf(m.UID)
		}
		out = append(out, s)
	}
	return out, nil
}

// expected returns how long to wait for a migration the trigger created or adopted
// for gr to show in the cache as the trigger's (0 once it has, or after
// expectationTTL).
func (t *Trigger) expected(gr schema.GroupResource, migs []migrationSummary) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.expect[gr]
	if !ok {
		return 0
	}
	for _, m := range migs {
		if m.Name == e.name && m.Triggered {
			delete(t.expect, gr)
			return 0
		}
	}
	if time.Since(e.created) > expectationTTL {
		delete(t.expect, gr)
		return 0
	}
	return 200 * time.Millisecond
}

// launch creates the n-th migration of gr, to obs.Current.
func (t *Trigger) launch(ctx context.Context, gr schema.GroupResource, obs observation, n int) error {
	m := &migrationapi.StorageVersionMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: migrationapi.StorageVersionMigrations.GroupVersion().String(), Kind: "StorageVersionMigration"},
		ObjectMeta: metav1.ObjectMeta{Name: migrationName(migrationapi.StorageStateName(gr), n), Annotations: map[string]string{migrationapi.AnnotationStorageVersionHash: obs.Current}},
	}
	m.Spec.Resource = migrationapi.MetaGroupResource(gr)
	if obs.ResourceVersion != "" {
		m.Annotations[migrationapi.AnnotationStorageVersionResourceVersion] = obs.ResourceVersion
	}
	if obs.EncodingVersion != "" {
		m.Annotations[migrationapi.AnnotationEncodingVersion] = obs.EncodingVersion
	}
	u, err := migrationapi.ToUnstructured(m)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "status")
	created, err := t.dyn.Resource(migrationapi.StorageVersionMigrations).Create(ctx, u, metav1.CreateOptions{FieldManager: migrationapi.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		// Created by an earlier attempt whose answer was lost, or a name taken by
		// someone else: look again once the cache has it.
		return fmt.Errorf("migration %s already exists; waiting for the cache: %w", m.Name, err)
	}
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.expect[gr] = expectation{name: created.GetName(), created: time.Now()}
	t.mu.Unlock()
	klog.FromContext(ctx).Info("Storage version changed; migration started", "migration", created.GetName(),
		"storageVersionHash", obs.Current, "encodingVersion", obs.EncodingVersion, "storageVersionResourceVersion", obs.ResourceVersion)
	return nil
}

// abort marks a running migration Failed; the controller running it stops.
func (t *Trigger) abort(ctx context.Context, a abort) error {
	client := t.dyn.Resource(migrationapi.StorageVersionMigrations)
	u, err := client.Get(ctx, a.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	m, err := migrationapi.MigrationFrom(u)
	if err != nil || m.Terminal() {
		return err
	}
	conds := slices.Clone(m.Status.Conditions)
	meta.SetStatusCondition(&conds, metav1.Condition{Type: migrationapi.ConditionRunning, Status: metav1.ConditionFalse, Reason: a.Reason,
		Message: "The migration was aborted.", ObservedGeneration: m.Generation})
	meta.SetStatusCondition(&conds, metav1.Condition{Type: migrationapi.ConditionFailed, Status: metav1.ConditionTrue, Reason: a.Reason,
		Message: a.Message, ObservedGeneration: m.Generation})
	c, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&migrationapi.MigrationStatus{Conditions: conds})
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedField(u.Object, c["conditions"], "status", "conditions"); err != nil {
		return err
	}
	if _, err := client.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: migrationapi.FieldManager}); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Migration aborted", "migration", a.Name, "reason", a.Reason)
	return nil
}

// prune deletes the trigger's oldest ended migrations of a resource beyond the
// history limit.
func (t *Trigger) prune(ctx context.Context, migs []migrationSummary) error {
	var ended []migrationSummary
	for _, m := range migs {
		if m.Triggered && m.terminal() {
			ended = append(ended, m)
		}
	}
	if len(ended) <= t.history {
		return nil
	}
	slices.SortFunc(ended, func(a, b migrationSummary) int { return a.Sequence - b.Sequence })
	var errs []error
	for _, m := range ended[:len(ended)-t.history] {
		err := t.dyn.Resource(migrationapi.StorageVersionMigrations).Delete(ctx, m.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeState creates the StorageState of gr or updates its status.
func (t *Trigger) writeState(ctx context.Context, gr schema.GroupResource, obj *unstructured.Unstructured, st migrationapi.StorageStateStatus) error {
	client := t.dyn.Resource(migrationapi.StorageStates)
	if obj == nil {
		s := &migrationapi.StorageState{
			TypeMeta: metav1.TypeMeta{APIVersion: migrationapi.StorageStates.GroupVersion().String(), Kind: "StorageState"},
			ObjectMeta: metav1.ObjectMeta{Name: migrationapi.StorageStateName(gr),
				Labels: map[string]string{migrationapi.LabelManagedBy: migrationapi.FieldManager}},
			Spec: migrationapi.StorageStateSpec{Resource: migrationapi.MetaGroupResource(gr)},
		}
		u, err := migrationapi.ToUnstructured(s)
		if err != nil {
			return err
		}
		unstructured.RemoveNestedField(u.Object, "status")
		if obj, err = client.Create(ctx, u, metav1.CreateOptions{FieldManager: migrationapi.FieldManager}); err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Storage state created")
	}
	next := obj.DeepCopy()
	s, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	next.Object["status"] = s
	_, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: migrationapi.FieldManager})
	return err
}
