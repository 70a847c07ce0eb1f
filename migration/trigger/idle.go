package trigger

import (
	"context"
	"fmt"

	migrationapi "github.com/concordproject/concord/migration/api"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// idleReason is why the trigger does not migrate a resource: a Reason of a False
// Tracked condition. Gone is true when the resource is not served (or cannot be
// listed and updated), which ends the trigger's own StorageState of it.
type idleReason struct {
	Reason string
	Gone   bool
}

// trackedMessages are the Tracked conditions' messages by reason; %s is the
// resource's StorageState name.
var trackedMessages = map[string]string{
	migrationapi.ReasonResourceTracked: "The trigger follows the storage versions of %s and migrates its objects when they change.",
	migrationapi.ReasonResourceNotServed: "No API server serves %s: the trigger records no storage version of it and migrates nothing. " +
		"It tracks this state once the resource is served; delete the state if it was created by mistake.",
	migrationapi.ReasonResourceNotMigratable: "%s is served but cannot be listed and updated, so its objects cannot be migrated.",
	migrationapi.ReasonResourceNotPersisted:  "%s has no storage version (its objects are not stored): there is nothing to migrate.",
	migrationapi.ReasonAggregatedWithoutStorageVersions: "%s is an aggregated API whose servers publish no StorageVersion: " +
		"what they encode in cannot be known, so it is not migrated.",
	migrationapi.ReasonResourceIgnored: "The storage-migration trigger is configured to leave %s alone (ignored resources).",
}

// trackedCondition returns the Tracked condition of gr for reason, at now. It has no
// observedGeneration: a StorageState's spec never changes.
func trackedCondition(gr schema.GroupResource, reason string, now metav1.Time) metav1.Condition {
	status := metav1.ConditionFalse
	if reason == migrationapi.ReasonResourceTracked {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: migrationapi.ConditionTracked, Status: status, Reason: reason,
		Message: fmt.Sprintf(trackedMessages[reason], migrationapi.StorageStateName(gr)), LastTransitionTime: now}
}

// setTracked sets the Tracked condition of st to True, and reports whether that
// changed it.
func (t *Trigger) setTracked(st *migrationapi.StorageStateStatus, gr schema.GroupResource) bool {
	return meta.SetStatusCondition(&st.Conditions, trackedCondition(gr, migrationapi.ReasonResourceTracked, metav1.NewTime(t.now())))
}

// keepIdle deals with the StorageState of a resource the trigger does not migrate
// (nil: there is none). A state the trigger created (migrationapi.LabelManagedBy) is
// deleted once its resource is gone, as the trigger would not create it. Any other is
// kept: a user's object does not vanish under them; its Tracked condition becomes
// False, with why, and the trigger tracks it as soon as the reason passes (every poll
// looks at every state).
func (t *Trigger) keepIdle(ctx context.Context, gr schema.GroupResource, stateObj *unstructured.Unstructured, why idleReason) error {
	if stateObj == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	client := t.dyn.Resource(migrationapi.StorageStates)
	if why.Gone && stateObj.GetLabels()[migrationapi.LabelManagedBy] == migrationapi.FieldManager {
		logger.Info("Resource no longer served; deleting the storage state the trigger created", "reason", why.Reason)
		err := client.Delete(ctx, stateObj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(stateObj.GetUID())}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	state, err := migrationapi.StateFrom(stateObj)
	if err != nil {
		return err
	}
	conds := state.Status.Conditions
	if !meta.SetStatusCondition(&conds, trackedCondition(gr, why.Reason, metav1.NewTime(t.now()))) {
		return nil
	}
	c, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&migrationapi.StorageStateStatus{Conditions: conds})
	if err != nil {
		return err
	}
	next := stateObj.DeepCopy()
	if err := unstructured.SetNestedField(next.Object, c["conditions"], "status", "conditions"); err != nil {
		return err
	}
	if _, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: migrationapi.FieldManager}); err != nil {
		return err
	}
	logger.Info("Storage state kept idle", "reason", why.Reason)
	return nil
}
