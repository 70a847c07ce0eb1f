package kubesemantics

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	pvutil "k8s.io/kubernetes/pkg/api/persistentvolume"
	pvcutil "k8s.io/kubernetes/pkg/api/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	volumevalidation "k8s.io/kubernetes/pkg/volume/validation"
)

// now is the clock of the phase transitions the strategies record (tests replace it).
var now = metav1.Now

// coreVolumeKinds are the strategies of PersistentVolumes and PersistentVolumeClaims.
func coreVolumeKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Resource: "persistentvolumes"}: kind[*core.PersistentVolume]{
			prepareCreate: func(_ context.Context, pv *core.PersistentVolume) {
				pvutil.DropDisabledSpecFields(&pv.Spec, nil)
				t := now()
				pv.Status = core.PersistentVolumeStatus{Phase: core.VolumePending, LastPhaseTransitionTime: &t}
			},
			validate: func(_ context.Context, pv *core.PersistentVolume) field.ErrorList { return validatePV(pv, nil) },
			warnCreate: func(_ context.Context, pv *core.PersistentVolume) []string {
				return pvutil.GetWarningsForPersistentVolume(pv)
			},
			prepareUpdate: func(_ context.Context, pv, old *core.PersistentVolume) {
				pv.Status = old.Status
				pvutil.DropDisabledSpecFields(&pv.Spec, &old.Spec)
			},
			validateUpdate: func(_ context.Context, pv, old *core.PersistentVolume) field.ErrorList { return validatePV(pv, old) },
			warnUpdate: func(_ context.Context, pv, _ *core.PersistentVolume) []string {
				return pvutil.GetWarningsForPersistentVolume(pv)
			},
			prepareStatus: preparePVStatus,
			validateStatus: func(_ context.Context, pv, old *core.PersistentVolume) field.ErrorList {
				return corevalidation.ValidatePersistentVolumeStatusUpdate(pv, old)
			},
		}.erase(),
		{Resource: "persistentvolumeclaims"}: kind[*core.PersistentVolumeClaim]{
			prepareCreate: func(_ context.Context, c *core.PersistentVolumeClaim) {
				c.Status = core.PersistentVolumeClaimStatus{}
				pvcutil.DropDisabledFields(&c.Spec, nil)
				pvcutil.EnforceDataSourceBackwardsCompatibility(&c.Spec, nil)
				pvcutil.NormalizeDataSources(&c.Spec)
			},
			validate: func(_ context.Context, c *core.PersistentVolumeClaim) field.ErrorList {
				return corevalidation.ValidatePersistentVolumeClaim(c, corevalidation.ValidationOptionsForPersistentVolumeClaim(c, nil))
			},
			warnCreate: func(_ context.Context, c *core.PersistentVolumeClaim) []string {
				return pvcutil.GetWarningsForPersistentVolumeClaim(c)
			},
			prepareUpdate: preparePVCUpdate,
			validateUpdate: func(_ context.Context, c, old *core.PersistentVolumeClaim) field.ErrorList {
				return corevalidation.ValidatePersistentVolumeClaimUpdate(c, old, corevalidation.ValidationOptionsForPersistentVolumeClaim(c, old))
			},
			warnUpdate: func(_ context.Context, c, _ *core.PersistentVolumeClaim) []string {
				return pvcutil.GetWarningsForPersistentVolumeClaim(c)
			},
			prepareStatus: func(_ context.Context, c, old *core.PersistentVolumeClaim) {
				c.Spec = old.Spec
				pvcutil.DropDisabledFieldsFromStatus(c, old)
			},
			validateStatus: func(_ context.Context, c, old *core.PersistentVolumeClaim) field.ErrorList {
				return corevalidation.ValidatePersistentVolumeClaimStatusUpdate(c, old, corevalidation.ValidationOptionsForPersistentVolumeClaim(c, old))
			},
		}.erase(),
	}
}

// validatePV validates a PersistentVolume (an update of old; old nil on creation):
// core's validation, then the volume package's (of its mount options and host path).
func validatePV(pv, old *core.PersistentVolume) field.ErrorList {
	opts := corevalidation.ValidationOptionsForPersistentVolume(pv, old)
	errs := append(corevalidation.ValidatePersistentVolume(pv, opts), volumevalidation.ValidatePersistentVolume(pv)...)
	if old != nil {
		errs = append(errs, corevalidation.ValidatePersistentVolumeUpdate(pv, old, opts)...)
	}
	return errs
}

// preparePVStatus keeps the spec of a status update and records when the phase
// changes: a phase left as it was keeps its transition time if the client sent none; a
// new phase whose time the client did not set (or left as it was) gets the present.
func preparePVStatus(_ context.Context, pv, old *core.PersistentVolume) {
	pv.Spec = old.Spec
	sent := pv.Status.LastPhaseTransitionTime
	switch {
	case pv.Status.Phase == old.Status.Phase:
		if sent == nil {
			pv.Status.LastPhaseTransitionTime = old.Status.LastPhaseTransitionTime
		}
	case sent == nil || sent.Equal(old.Status.LastPhaseTransitionTime):
		t := now()
		pv.Status.LastPhaseTransitionTime = &t
	}
}

// preparePVCUpdate keeps the status of an update, drops the fields of gates that are
// off, and fills in the data source fields, of the old claim too, as a creation does:
// an older client may leave out the dataSourceRef the server derived.
func preparePVCUpdate(_ context.Context, c, old *core.PersistentVolumeClaim) {
	c.Status = old.Status
	pvcutil.DropDisabledFields(&c.Spec, &old.Spec)
	pvcutil.EnforceDataSourceBackwardsCompatibility(&c.Spec, &old.Spec)
	pvcutil.NormalizeDataSources(&c.Spec)
	pvcutil.NormalizeDataSources(&old.Spec)
}
