package trigger

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Adoption: a StorageVersionMigration someone else created (by hand, as `concord
// upgrade-check` advises) proves, once it succeeds, what the trigger's own would,
// provided it ran while the servers agreed on the current version. The trigger's own
// migrations carry that proof from their creation (the StorageVersion
// resourceVersion they were started at); for another's, the trigger notes what it
// observes when it first sees the migration still pending (a sighting), before any
// migrator could have listed an object, and plan adopts it as the trigger's latest
// only if the observation still holds. Adopting stamps the trigger's annotations on
// it, with AnnotationSequence, so that it is the trigger's own from then on.

// sightingHandler notes, for every migration the trigger did not create that it sees
// pending, what it observes of the resource then; and forgets the migrations deleted.
func (t *Trigger) sightingHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    t.sight,
		UpdateFunc: func(_, obj interface{}) { t.sight(obj) },
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				t.mu.Lock()
				delete(t.sightings, u.GetUID())
				t.mu.Unlock()
			}
		},
	}
}

// sight records the sighting of the migration obj if it is another's, still pending
// (no condition, no progress, no resourceVersion: nothing has run it yet), and not
// sighted before.
func (t *Trigger) sight(obj interface{}) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if _, mine := u.GetAnnotations()[migrationapi.AnnotationStorageVersionHash]; mine {
		return
	}
	if st, _, _ := unstructured.NestedMap(u.Object, "status"); len(st) > 0 {
		return
	}
	g, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "group")
	r, _, _ := unstructured.NestedString(u.Object, "spec", "resource", "resource")
	gr := schema.GroupResource{Group: g, Resource: r}
	s := sighting{}
	if sv := t.storageVersionObject(gr); sv != nil {
		s.StorageVersionRV = sv.GetResourceVersion()
	}
	if info, ok := t.res.Get(gr); ok {
		s.Hash = info.Hash
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.sightings[u.GetUID()]; !seen {
		t.sightings[u.GetUID()] = s
	}
}

// sightingOf returns the sighting of the migration uid, nil if there is none.
func (t *Trigger) sightingOf(uid types.UID) *sighting {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.sightings[uid]
	if !ok {
		return nil
	}
	return &s
}

// adopt makes migration name the trigger's n-th migration of gr, for obs: it writes
// the annotations the trigger's own carry (a merge patch conditional on the
// resourceVersion the cache holds: a migration changed meanwhile is looked at again).
func (t *Trigger) adopt(ctx context.Context, gr schema.GroupResource, obs observation, name string, n int) error {
	obj, ok, err := t.migrations.GetIndexer().GetByKey(name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("adopting migration %s: %w", name, errGone)
	}
	u := obj.(*unstructured.Unstructured)
	annotations := map[string]string{
		migrationapi.AnnotationStorageVersionHash: obs.Current,
		migrationapi.AnnotationSequence:           strconv.Itoa(n),
	}
	if obs.ResourceVersion != "" {
		annotations[migrationapi.AnnotationStorageVersionResourceVersion] = obs.ResourceVersion
	}
	if obs.EncodingVersion != "" {
		annotations[migrationapi.AnnotationEncodingVersion] = obs.EncodingVersion
	}
	patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
		"resourceVersion": u.GetResourceVersion(), "annotations": annotations}})
	if err != nil {
		return err
	}
	_, err = t.dyn.Resource(migrationapi.StorageVersionMigrations).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: migrationapi.FieldManager})
	if err != nil {
		return fmt.Errorf("adopting migration %s: %w", name, err)
	}
	t.mu.Lock()
	t.expect[gr] = expectation{name: name, created: time.Now()}
	delete(t.sightings, u.GetUID())
	t.mu.Unlock()
	klog.FromContext(ctx).Info("Migration adopted: it counts as the trigger's own", "migration", name, "phase", phaseOf(u),
		"storageVersionHash", obs.Current, "storageVersionResourceVersion", obs.ResourceVersion)
	return nil
}

// phaseOf returns the phase of the migration u ("" if it cannot be decoded).
func phaseOf(u *unstructured.Unstructured) string {
	m, err := migrationapi.MigrationFrom(u)
	if err != nil {
		return ""
	}
	return m.Phase()
}
