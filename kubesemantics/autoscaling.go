package kubesemantics

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"k8s.io/kubernetes/pkg/features"

	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install" // autoscaling's types, defaults and conversions
)

func init() { groups = append(groups, autoscalingKinds) }

// autoscalingKinds are the strategies of group autoscaling.
func autoscalingKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Group: "autoscaling", Resource: "horizontalpodautoscalers"}: hpaKind().erase(),
	}
}

// hpaKind is the strategy of HorizontalPodAutoscalers. Their generation counts the
// changes of their spec only with the HPAGeneration gate; without it, kube leaves it
// as the client wrote it.
func hpaKind() kind[*autoscaling.HorizontalPodAutoscaler] {
	return kind[*autoscaling.HorizontalPodAutoscaler]{
		prepareCreate: func(_ context.Context, h *autoscaling.HorizontalPodAutoscaler) {
			h.Status = autoscaling.HorizontalPodAutoscalerStatus{}
			if utilfeature.DefaultFeatureGate.Enabled(features.HPAGeneration) {
				h.Generation = 1
			}
			dropHPATolerance(h, nil)
		},
		validate: func(_ context.Context, h *autoscaling.HorizontalPodAutoscaler) field.ErrorList {
			return autoscalingvalidation.ValidateHorizontalPodAutoscaler(h, hpaValidationOptions(h, nil))
		},
		prepareUpdate: func(_ context.Context, h, old *autoscaling.HorizontalPodAutoscaler) {
			h.Status = old.Status
			dropHPATolerance(h, old)
			if utilfeature.DefaultFeatureGate.Enabled(features.HPAGeneration) && !apiequality.Semantic.DeepEqual(h.Spec, old.Spec) {
				h.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, h, old *autoscaling.HorizontalPodAutoscaler) field.ErrorList {
			return autoscalingvalidation.ValidateHorizontalPodAutoscalerUpdate(h, old, hpaValidationOptions(h, old))
		},
		prepareStatus: func(_ context.Context, h, old *autoscaling.HorizontalPodAutoscaler) { h.Spec = old.Spec },
		validateStatus: func(_ context.Context, h, old *autoscaling.HorizontalPodAutoscaler) field.ErrorList {
			return autoscalingvalidation.ValidateHorizontalPodAutoscalerStatusUpdate(h, old)
		},
		declarative: hpaDeclarative,
	}
}

// scalesToZero reports whether an autoscaler may scale its target to zero replicas:
// with the HPAScaleToZero gate, or, on update, when the stored one already does
// (old nil on create).
func scalesToZero(old *autoscaling.HorizontalPodAutoscaler) bool {
	if utilfeature.DefaultFeatureGate.Enabled(features.HPAScaleToZero) {
		return true
	}
	return old != nil && old.Spec.MinReplicas != nil && *old.Spec.MinReplicas == 0
}

// hpaDeclarative gives declarative validation its one option: whether minReplicas may
// be zero.
func hpaDeclarative(_ context.Context, _, old *autoscaling.HorizontalPodAutoscaler) rest.DeclarativeValidationConfig {
	return rest.DeclarativeValidationConfig{Options: map[string]bool{string(features.HPAScaleToZero): scalesToZero(old)}}
}

// hpaValidationOptions are the options of an autoscaler's validation, old nil on
// create. minReplicas may be zero where scalesToZero says so, else at least one. The
// scale target's apiVersion must name a group (but for a ReplicationController's)
// and parse, unless an update keeps the target's apiVersion and kind; an object
// metric's described object may be of the core group, and its apiVersion may stay
// unparseable where a stored metric's already was. Declarative validation reports a
// missing target kind or name.
func hpaValidationOptions(h, old *autoscaling.HorizontalPodAutoscaler) autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions {
	opts := autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions{
		MinReplicasLowerBound:           1,
		ScaleTargetRefValidationOptions: autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{RequiredCoveredByDeclarative: true},
		ObjectMetricsValidationOptions:  autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{AllowEmptyAPIGroup: true},
	}
	if scalesToZero(old) {
		opts.MinReplicasLowerBound = 0
	}
	target := h.Spec.ScaleTargetRef
	switch {
	case old != nil && old.Spec.ScaleTargetRef.APIVersion == target.APIVersion && old.Spec.ScaleTargetRef.Kind == target.Kind:
		opts.ScaleTargetRefValidationOptions.AllowInvalidAPIVersion = true
	case target.Kind == "ReplicationController":
		opts.ScaleTargetRefValidationOptions.AllowEmptyAPIGroup = true
	}
	if old != nil && hasInvalidObjectMetric(old, opts.ObjectMetricsValidationOptions) {
		opts.ObjectMetricsValidationOptions.AllowInvalidAPIVersion = true
	}
	return opts
}

// hasInvalidObjectMetric reports whether one of h's object metrics describes an
// object whose apiVersion opts refuse.
func hasInvalidObjectMetric(h *autoscaling.HorizontalPodAutoscaler, opts autoscalingvalidation.CrossVersionObjectReferenceValidationOptions) bool {
	for _, m := range h.Spec.Metrics {
		if m.Type == autoscaling.ObjectMetricSourceType && m.Object != nil && autoscalingvalidation.ValidateAPIVersion(m.Object.DescribedObject, opts) != nil {
			return true
		}
	}
	return false
}

// dropHPATolerance clears the scaling rules' tolerance while the
// HPAConfigurableTolerance gate is off, unless old (nil on create) already sets one.
func dropHPATolerance(h, old *autoscaling.HorizontalPodAutoscaler) {
	if utilfeature.DefaultFeatureGate.Enabled(features.HPAConfigurableTolerance) || setsTolerance(old) || h.Spec.Behavior == nil {
		return
	}
	for _, rules := range []*autoscaling.HPAScalingRules{h.Spec.Behavior.ScaleUp, h.Spec.Behavior.ScaleDown} {
		if rules != nil {
			rules.Tolerance = nil
		}
	}
}

// setsTolerance reports whether h (nil: no) sets a tolerance in a scaling rule.
func setsTolerance(h *autoscaling.HorizontalPodAutoscaler) bool {
	if h == nil || h.Spec.Behavior == nil {
		return false
	}
	b := h.Spec.Behavior
	return b.ScaleUp != nil && b.ScaleUp.Tolerance != nil || b.ScaleDown != nil && b.ScaleDown.Tolerance != nil
}
