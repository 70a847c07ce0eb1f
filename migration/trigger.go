package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// byResource indexes StorageVersionMigrations by "<group>/<resource>" of spec.resource.
const byResource = "resource"

func resourceIndex(obj interface{}) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	g, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "group")
	r, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "resource")
	return []string{g + "/" + r}, nil
}

// expectationTTL bounds how long the trigger waits for a migration it created to
// appear in its cache before it looks at the resource again without it.
const expectationTTL = 30 * time.Second

// trigger keeps one StorageState per persisted resource and starts migrations, as
// plan says, from the StorageVersion objects when the server serves them (watched),
// else from discovery's storageVersionHash (polled).
type trigger struct {
	dyn        dynamic.Interface
	res        *resources
	factory    dynamicinformer.DynamicSharedInformerFactory
	states     cache.SharedIndexInformer
	migrations cache.SharedIndexInformer
	queue      workqueue.TypedRateLimitingInterface[schema.GroupResource]
	cfg        lifecycleConfig
	poll       time.Duration
	history    int
	ignored    []schema.GroupResource
	now        func() time.Time

	mu       sync.Mutex
	versions cache.SharedIndexInformer // nil until the StorageVersion API is seen
	expect   map[schema.GroupResource]expectation
}

// expectation is a migration the trigger created and has not seen in its cache yet.
type expectation struct {
	name    string
	created time.Time
}

func newTrigger(dyn dynamic.Interface, res *resources, factory dynamicinformer.DynamicSharedInformerFactory,
	migrations cache.SharedIndexInformer, cfg Config) (*trigger, error) {
	t := &trigger{
		dyn: dyn, res: res, factory: factory, migrations: migrations,
		states: factory.ForResource(StorageStates).Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[schema.GroupResource](100*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[schema.GroupResource]{Name: "storage-states"}),
		cfg:     lifecycleConfig{Heartbeat: cfg.PollInterval, Staleness: cfg.StalenessWindow, RetryFailed: cfg.RetryFailedAfter},
		poll:    cfg.PollInterval,
		history: cfg.HistoryLimit,
		ignored: cfg.IgnoredResources,
		now:     time.Now,
		expect:  map[schema.GroupResource]expectation{},
	}
	if err := migrations.AddIndexers(cache.Indexers{byResource: resourceIndex}); err != nil {
		return nil, err
	}
	if _, err := migrations.AddEventHandler(t.handler(func(u *unstructured.Unstructured) (schema.GroupResource, bool) {
		keys, _ := resourceIndex(u)
		g, r, _ := cutSlash(keys[0])
		return schema.GroupResource{Group: g, Resource: r}, r != ""
	})); err != nil {
		return nil, err
	}
	if _, err := t.states.AddEventHandler(t.handler(func(u *unstructured.Unstructured) (schema.GroupResource, bool) {
		g, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "group")
		r, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "resource")
		return schema.GroupResource{Group: g, Resource: r}, r != ""
	})); err != nil {
		return nil, err
	}
	return t, nil
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// handler queues the resource an object is about.
func (t *trigger) handler(key func(*unstructured.Unstructured) (schema.GroupResource, bool)) cache.ResourceEventHandler {
	add := func(obj interface{}) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if gr, ok := key(u); ok {
				t.queue.Add(gr)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj interface{}) { add(obj) }, DeleteFunc: add}
}

// storageVersionKey returns the resource a StorageVersion object is about.
func storageVersionKey(u *unstructured.Unstructured) (schema.GroupResource, bool) {
	return wire.ParseStorageVersionName(u.GetName())
}

// run polls discovery and processes resources until ctx is done.
func (t *trigger) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("trigger")
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	ticker := time.NewTicker(t.poll)
	defer ticker.Stop()
	for first := true; ; first = false {
		t.pollOnce(ctx)
		if first {
			// Only now is it known whether StorageVersions are served (and watched):
			// no resource is looked at from discovery alone before.
			wg.Go(func() {
				for t.processNext(ctx) {
				}
			})
		}
		select {
		case <-ctx.Done():
			t.queue.ShutDown()
			wg.Wait()
			return
		case <-ticker.C:
		}
	}
}

// pollOnce reads discovery, starts watching StorageVersions once they are served,
// and queues every resource.
func (t *trigger) pollOnce(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("Polling discovery")
	if err := t.res.refresh(ctx); err != nil {
		logger.Error(err, "Discovery failed; polling again later")
	}
	t.mu.Lock()
	watching := t.versions != nil
	t.mu.Unlock()
	if !watching && t.res.served(StorageVersions) {
		inf := t.factory.ForResource(StorageVersions).Informer()
		if _, err := inf.AddEventHandler(t.handler(storageVersionKey)); err != nil {
			logger.Error(err, "Cannot watch StorageVersions")
		} else {
			t.factory.Start(ctx.Done())
			if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.mu.Lock()
				t.versions = inf
				t.mu.Unlock()
				logger.Info("Watching StorageVersion objects: migrations start when the API servers agree on an encoding version")
			}
		}
	}
	seen := map[schema.GroupResource]bool{}
	for _, gr := range t.res.all() {
		seen[gr] = true
	}
	for _, obj := range t.states.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			g, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "group")
			r, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "resource")
			seen[schema.GroupResource{Group: g, Resource: r}] = true
		}
	}
	if v := t.versionsInformer(); v != nil {
		for _, obj := range v.GetStore().List() {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				if gr, ok := storageVersionKey(u); ok {
					seen[gr] = true
				}
			}
		}
	}
	for gr := range seen {
		t.queue.Add(gr)
	}
}

func (t *trigger) versionsInformer() cache.SharedIndexInformer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.versions
}

func (t *trigger) processNext(ctx context.Context) bool {
	gr, quit := t.queue.Get()
	if quit {
		return false
	}
	defer t.queue.Done(gr)
	after, err := t.sync(ctx, gr)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Storage state not updated; retrying", "resource", StorageStateName(gr))
		}
		t.queue.AddRateLimited(gr)
	case after > 0:
		t.queue.Forget(gr)
		t.queue.AddAfter(gr, after)
	default:
		t.queue.Forget(gr)
	}
	return true
}

// sync brings the StorageState of gr and its migrations to what plan says. It
// returns when to look again, if sooner than the next poll.
func (t *trigger) sync(ctx context.Context, gr schema.GroupResource) (time.Duration, error) {
	if slices.Contains(t.ignored, gr) || gr.Resource == "" {
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("resource", StorageStateName(gr))
	ctx = klog.NewContext(ctx, logger)
	stateObj, err := t.stateObject(gr)
	if err != nil {
		return 0, err
	}
	if !t.res.synced() {
		return t.poll, nil // nothing is known of what the server serves yet
	}
	info, known := t.res.get(gr)
	svObj := t.storageVersionObject(gr)
	if !known && svObj != nil {
		// Servers report a resource that discovery did not list when last read (a
		// definition created since): read discovery again now rather than at the next
		// poll, up to a minute away.
		if info, known, err = t.res.lookup(ctx, gr, time.Second); err != nil {
			return 0, err
		}
	}
	if !known || !info.Migratable || (svObj == nil && info.Hash == "") {
		logger.V(4).Info("Not migrated", "served", known, "migratable", info.Migratable, "storageVersionHash", info.Hash, "storageVersionObject", svObj != nil)
		// Not served, not persisted, or not migratable: nothing to keep a state for.
		if stateObj != nil && (!known || !info.Migratable) {
			logger.Info("Resource no longer served; deleting its storage state")
			err := t.dyn.Resource(StorageStates).Delete(ctx, stateObj.GetName(), metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: ptr(stateObj.GetUID())}})
			if err != nil && !apierrors.IsNotFound(err) {
				return 0, err
			}
		}
		return 0, nil
	}
	obs, err := observe(info, svObj)
	if err != nil {
		logger.Error(err, "Ignoring an undecodable StorageVersion; using discovery")
		obs, _ = observe(info, nil)
	}

	migs, err := t.migrationsOf(gr)
	if err != nil {
		return 0, err
	}
	if wait := t.expected(gr, migs); wait > 0 {
		return wait, nil
	}
	in := lifecycleInput{Now: t.now(), Observed: obs}
	var state *StorageState
	if stateObj != nil {
		if state, err = stateFrom(stateObj); err != nil {
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
		if m.Triggered && (in.Latest == nil || m.Sequence > in.Latest.Sequence) {
			in.Latest = m
		}
		maxSeq = max(maxSeq, sequenceOf(m.Name)) // names taken by anyone are skipped
	}
	in.ConsecutiveFailures = consecutiveFailures(migs, obs.Current)
	out := plan(in, t.cfg)
	logger.V(4).Info("Storage state planned", "observed", obs, "persisted", out.Status.PersistedStorageVersionHashes,
		"current", out.Status.CurrentStorageVersionHash, "launch", out.Launch, "abort", len(out.Abort), "write", out.WriteStatus)

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
	if err := t.prune(ctx, migs); err != nil {
		logger.Error(err, "Could not delete old migrations")
	}
	if out.WriteStatus {
		if err := t.writeState(ctx, gr, stateObj, out.Status); err != nil {
			return 0, err
		}
	}
	if out.Reset && stateObj != nil {
		logger.Info("Storage state stale; reset to Unknown", "lastHeartbeat", state.Status.LastHeartbeatTime)
	}
	return out.RequeueAfter, nil
}

// observe makes the observation of a resource from its StorageVersion object (nil:
// from discovery).
func observe(info resourceInfo, sv *unstructured.Unstructured) (observation, error) {
	if sv == nil {
		return observation{Agreed: true, Current: info.Hash, Reported: []string{info.Hash}}, nil
	}
	obj := &apiserverinternalv1alpha1.StorageVersion{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sv.Object, obj); err != nil {
		return observation{}, err
	}
	hash := func(encodingVersion string) (string, error) {
		gv, err := schema.ParseGroupVersion(encodingVersion)
		if err != nil {
			return "", err
		}
		return wire.StorageVersionHash(gv.Group, gv.Version, info.Kind), nil
	}
	obs := observation{ResourceVersion: sv.GetResourceVersion()}
	for _, e := range obj.Status.StorageVersions {
		h, err := hash(e.EncodingVersion)
		if err != nil {
			return observation{}, fmt.Errorf("StorageVersion %s: server %s: %w", sv.GetName(), e.APIServerID, err)
		}
		obs.Reported = appendMissing(obs.Reported, h)
	}
	if c := obj.Status.CommonEncodingVersion; c != nil && len(obj.Status.StorageVersions) > 0 {
		h, err := hash(*c)
		if err != nil {
			return observation{}, fmt.Errorf("StorageVersion %s: %w", sv.GetName(), err)
		}
		obs.Agreed, obs.Current, obs.EncodingVersion = true, h, *c
	}
	return obs, nil
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
		if m.Hash != hash || m.Phase != ConditionFailed || m.Aborted {
			break
		}
		n++
	}
	return n
}

func (t *trigger) stateObject(gr schema.GroupResource) (*unstructured.Unstructured, error) {
	obj, ok, err := t.states.GetStore().GetByKey(StorageStateName(gr))
	if err != nil || !ok {
		return nil, err
	}
	return obj.(*unstructured.Unstructured), nil
}

func (t *trigger) storageVersionObject(gr schema.GroupResource) *unstructured.Unstructured {
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
func (t *trigger) migrationsOf(gr schema.GroupResource) ([]migrationSummary, error) {
	objs, err := t.migrations.GetIndexer().ByIndex(byResource, gr.Group+"/"+gr.Resource)
	if err != nil {
		return nil, err
	}
	out := make([]migrationSummary, 0, len(objs))
	for _, obj := range objs {
		m, err := migrationFrom(obj.(*unstructured.Unstructured))
		if err != nil {
			continue
		}
		out = append(out, summarize(m))
	}
	return out, nil
}

// expected returns how long to wait for a migration the trigger created for gr to
// show in the cache (0 once it has, or after expectationTTL).
func (t *trigger) expected(gr schema.GroupResource, migs []migrationSummary) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.expect[gr]
	if !ok {
		return 0
	}
	for _, m := range migs {
		if m.Name == e.name {
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
func (t *trigger) launch(ctx context.Context, gr schema.GroupResource, obs observation, n int) error {
	m := &StorageVersionMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: StorageVersionMigrations.GroupVersion().String(), Kind: "StorageVersionMigration"},
		ObjectMeta: metav1.ObjectMeta{Name: migrationName(StorageStateName(gr), n), Annotations: map[string]string{AnnotationStorageVersionHash: obs.Current}},
	}
	m.Spec.Resource = groupResource(gr)
	if obs.ResourceVersion != "" {
		m.Annotations[AnnotationStorageVersionResourceVersion] = obs.ResourceVersion
	}
	if obs.EncodingVersion != "" {
		m.Annotations[AnnotationEncodingVersion] = obs.EncodingVersion
	}
	u, err := toUnstructured(m)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "status")
	created, err := t.dyn.Resource(StorageVersionMigrations).Create(ctx, u, metav1.CreateOptions{FieldManager: componentName})
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
func (t *trigger) abort(ctx context.Context, a abort) error {
	client := t.dyn.Resource(StorageVersionMigrations)
	u, err := client.Get(ctx, a.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	m, err := migrationFrom(u)
	if err != nil || m.Terminal() {
		return err
	}
	conds := slices.Clone(m.Status.Conditions)
	meta.SetStatusCondition(&conds, metav1.Condition{Type: ConditionRunning, Status: metav1.ConditionFalse, Reason: a.Reason,
		Message: "The migration was aborted.", ObservedGeneration: m.Generation})
	meta.SetStatusCondition(&conds, metav1.Condition{Type: ConditionFailed, Status: metav1.ConditionTrue, Reason: a.Reason,
		Message: a.Message, ObservedGeneration: m.Generation})
	c, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&MigrationStatus{Conditions: conds})
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedField(u.Object, c["conditions"], "status", "conditions"); err != nil {
		return err
	}
	if _, err := client.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: componentName}); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Migration aborted", "migration", a.Name, "reason", a.Reason)
	return nil
}

// prune deletes the trigger's oldest ended migrations of a resource beyond the
// history limit.
func (t *trigger) prune(ctx context.Context, migs []migrationSummary) error {
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
		err := t.dyn.Resource(StorageVersionMigrations).Delete(ctx, m.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeState creates the StorageState of gr or updates its status.
func (t *trigger) writeState(ctx context.Context, gr schema.GroupResource, obj *unstructured.Unstructured, st StorageStateStatus) error {
	client := t.dyn.Resource(StorageStates)
	if obj == nil {
		s := &StorageState{
			TypeMeta:   metav1.TypeMeta{APIVersion: StorageStates.GroupVersion().String(), Kind: "StorageState"},
			ObjectMeta: metav1.ObjectMeta{Name: StorageStateName(gr)},
			Spec:       StorageStateSpec{Resource: groupResource(gr)},
		}
		u, err := toUnstructured(s)
		if err != nil {
			return err
		}
		unstructured.RemoveNestedField(u.Object, "status")
		if obj, err = client.Create(ctx, u, metav1.CreateOptions{FieldManager: componentName}); err != nil {
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
	_, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: componentName})
	return err
}

func ptr[T any](v T) *T { return &v }
