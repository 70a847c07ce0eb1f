package kubesemantics

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/apis/flowcontrol"
	flowcontrolvalidation "k8s.io/kubernetes/pkg/apis/flowcontrol/validation"

	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install" // flowcontrol's types, defaults and conversions
)

func init() { groups = append(groups, flowcontrolKinds) }

// flowcontrolKinds are the strategies of group flowcontrol.apiserver.k8s.io.
func flowcontrolKinds() map[schema.GroupResource]strategy {
	const group = "flowcontrol.apiserver.k8s.io"
	return map[schema.GroupResource]strategy{
		{Group: group, Resource: "flowschemas"}: kind[*flowcontrol.FlowSchema]{
			prepareCreate: func(_ context.Context, fs *flowcontrol.FlowSchema) {
				fs.Status, fs.Generation = flowcontrol.FlowSchemaStatus{}, 1
			},
			validate: func(_ context.Context, fs *flowcontrol.FlowSchema) field.ErrorList {
				return flowcontrolvalidation.ValidateFlowSchema(fs)
			},
			prepareUpdate: func(_ context.Context, fs, old *flowcontrol.FlowSchema) {
				fs.Status = old.Status
				fs.Generation = nextGeneration(old.Generation, apiequality.Semantic.DeepEqual(fs.Spec, old.Spec))
			},
			validateUpdate: func(_ context.Context, fs, old *flowcontrol.FlowSchema) field.ErrorList {
				return flowcontrolvalidation.ValidateFlowSchemaUpdate(old, fs)
			},
			prepareStatus: func(_ context.Context, fs, old *flowcontrol.FlowSchema) {
				fs.Spec = old.Spec
				keepStoredMeta(&fs.ObjectMeta, &old.ObjectMeta)
			},
			validateStatus: func(_ context.Context, fs, old *flowcontrol.FlowSchema) field.ErrorList {
				return flowcontrolvalidation.ValidateFlowSchemaStatusUpdate(old, fs)
			},
		}.erase(),
		{Group: group, Resource: "prioritylevelconfigurations"}: kind[*flowcontrol.PriorityLevelConfiguration]{
			prepareCreate: func(_ context.Context, pl *flowcontrol.PriorityLevelConfiguration) {
				pl.Status, pl.Generation = flowcontrol.PriorityLevelConfigurationStatus{}, 1
			},
			validate: validatePriorityLevel,
			prepareUpdate: func(_ context.Context, pl, old *flowcontrol.PriorityLevelConfiguration) {
				pl.Status = old.Status
				pl.Generation = nextGeneration(old.Generation, apiequality.Semantic.DeepEqual(pl.Spec, old.Spec))
			},
			// An update is validated as a creation is: kube has no update rules for
			// priority levels.
			validateUpdate: func(ctx context.Context, pl, _ *flowcontrol.PriorityLevelConfiguration) field.ErrorList {
				return validatePriorityLevel(ctx, pl)
			},
			prepareStatus: func(_ context.Context, pl, old *flowcontrol.PriorityLevelConfiguration) {
				pl.Spec = old.Spec
				keepStoredMeta(&pl.ObjectMeta, &old.ObjectMeta)
			},
			validateStatus: func(_ context.Context, pl, old *flowcontrol.PriorityLevelConfiguration) field.ErrorList {
				return flowcontrolvalidation.ValidatePriorityLevelConfigurationStatusUpdate(old, pl)
			},
		}.erase(),
	}
}

// validatePriorityLevel validates a priority level in the version of the request
// (some rules differ between flowcontrol's versions).
func validatePriorityLevel(ctx context.Context, pl *flowcontrol.PriorityLevelConfiguration) field.ErrorList {
	var gv schema.GroupVersion
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		gv = schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	}
	return flowcontrolvalidation.ValidatePriorityLevelConfiguration(pl, gv, flowcontrolvalidation.PriorityLevelValidationOptions{})
}

// keepStoredMeta makes meta, of a status update, the stored object's metadata, but
// for the managed fields the update computed.
func keepStoredMeta(meta, old *metav1.ObjectMeta) {
	managed := meta.ManagedFields
	*meta = *old
	meta.ManagedFields = managed
}

// nextGeneration is the generation of an update of an object at generation old: one
// more unless its spec is unchanged.
func nextGeneration(old int64, unchanged bool) int64 {
	if unchanged {
		return old
	}
	return old + 1
}
