package kubesemantics

import (
	"testing"

	"github.com/concordproject/concord/registry"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	"k8s.io/utils/ptr"
)

const hpaManifest = `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default, generation: 5}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  behavior:
    scaleUp: {tolerance: "0.05"}
status: {currentReplicas: 2, desiredReplicas: 3}
`

// hpaResource is the HorizontalPodAutoscalers of a server at release, in autoscaling
// v2 and v1.
func hpaResource(t *testing.T, release string) *registry.Resource {
	return handResource(t, semanticsAt(t, release), "autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "v2", "v1")
}

// HorizontalPodAutoscalers: autoscaling/v2's defaults, a reset status, generation 1
// with HPAGeneration (1.37; before, the client's); the tolerance only with its gate
// (off at 1.34); kube's errors, minReplicas 0 with HPAScaleToZero (on at 1.37, off at
// 1.36, but for an autoscaler that already has it).
func TestHorizontalPodAutoscalers(t *testing.T) {
	// The catalog's resource keeps v2beta1 and v2beta2, unserved, which kube no longer knows.
	r := catalogResource(t, semanticsAt(t, "1.37"), "autoscaling", "horizontalpodautoscalers")
	h := mustCreate(t, r, "v2", hpaManifest)
	wantField(t, h, "metadata.generation", 1)
	wantField(t, h, "status", map[string]any{"currentMetrics": nil, "desiredReplicas": 0})
	wantField(t, h, "spec.minReplicas", 1)
	wantField(t, h, "spec.metrics", []any{map[string]any{"type": "Resource", "resource": map[string]any{
		"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": 80},
	}}})
	wantField(t, h, "spec.behavior.scaleUp.tolerance", "50m")
	wantField(t, mustCreate(t, hpaResource(t, "1.36"), "v2", hpaManifest), "metadata.generation", 5)
	wantField(t, mustCreate(t, hpaResource(t, "1.34"), "v2", hpaManifest), "spec.behavior.scaleUp.tolerance", nil)

	for _, tc := range []struct {
		name, release, path string
		value               any
		want                []string
	}{
		{"no replicas", "1.37", "spec.maxReplicas", int64(0), []string{"spec.maxReplicas: Invalid value", "spec.maxReplicas: Required value"}},
		{"fewer max than min", "1.37", "spec.minReplicas", int64(7), []string{"spec.maxReplicas: Invalid value"}},
		{"scale to zero on a resource metric", "1.37", "spec.minReplicas", int64(0), []string{"spec.metrics: Forbidden"}},
		{"target without kind", "1.37", "spec.scaleTargetRef.kind", "", []string{"spec.scaleTargetRef.kind: Required value"}},
		{"target of the core group", "1.37", "spec.scaleTargetRef.apiVersion", "v1", []string{"spec.scaleTargetRef.apiVersion: Invalid value"}},
	} {
		obj := object(t, hpaManifest)
		set(obj.Object, tc.path, tc.value)
		manifest, _ := obj.MarshalJSON()
		_, errs := create(t, hpaResource(t, tc.release), "v2", string(manifest))
		wantErrors(t, tc.name, errs, tc.want...)
	}
	rc := object(t, hpaManifest)
	set(rc.Object, "spec.scaleTargetRef", map[string]any{"apiVersion": "v1", "kind": "ReplicationController", "name": "web"})
	manifest, _ := rc.MarshalJSON()
	mustCreate(t, r, "v2", string(manifest))

	// Scaling to zero needs an object or external metric.
	external := []any{map[string]any{"type": "External", "external": map[string]any{
		"metric": map[string]any{"name": "queue"}, "target": map[string]any{"type": "Value", "value": "10"},
	}}}
	toZero := object(t, hpaManifest)
	set(toZero.Object, "spec.minReplicas", int64(0))
	set(toZero.Object, "spec.metrics", external)
	manifest, _ = toZero.MarshalJSON()
	mustCreate(t, r, "v2", string(manifest))
	_, errs := create(t, hpaResource(t, "1.36"), "v2", string(manifest))
	wantErrors(t, "scaling to zero without the gate", errs, "spec.minReplicas: Invalid value")

	zero, errs := update(t, r, "v2", "", h, func(o map[string]any) { set(o, "spec.minReplicas", int64(0)); set(o, "spec.metrics", external) })
	wantErrors(t, "scaling to zero", errs)
	wantField(t, zero, "metadata.generation", 2)
	_, errs = update(t, hpaResource(t, "1.36"), "v2", "", zero, func(o map[string]any) { set(o, "spec.maxReplicas", int64(6)) })
	wantErrors(t, "keeping zero without the gate", errs)
	_, errs = update(t, r, "v2", "status", h, func(o map[string]any) { set(o, "status.desiredReplicas", int64(-1)) })
	wantErrors(t, "negative desired replicas", errs, "status.desiredReplicas: Invalid value")
}

// autoscaling/v1 goes through the same internal autoscaler: its CPU target is v2's
// metric, its errors kube's.
func TestHorizontalPodAutoscalersV1(t *testing.T) {
	r := hpaResource(t, "1.37")
	const v1 = `
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  targetCPUUtilizationPercentage: 50
`
	h := mustCreate(t, r, "v1", v1)
	wantField(t, h, "spec.targetCPUUtilizationPercentage", 50)
	wantField(t, h, "spec.minReplicas", 1)
	wantField(t, h, "metadata.generation", 1)
	obj := object(t, v1)
	set(obj.Object, "spec.targetCPUUtilizationPercentage", int64(0))
	manifest, _ := obj.MarshalJSON()
	_, errs := create(t, r, "v1", string(manifest))
	wantErrors(t, "a CPU target of zero", errs, "spec.metrics[0].resource.target.averageUtilization: Invalid value")
}

// The options of an autoscaler's validation and of its declarative validation.
func TestHPAValidationOptions(t *testing.T) {
	hpa := func(kind, apiVersion string, minReplicas int32, describedVersion string) *autoscaling.HorizontalPodAutoscaler {
		h := &autoscaling.HorizontalPodAutoscaler{}
		h.Spec.ScaleTargetRef = autoscaling.CrossVersionObjectReference{Kind: kind, APIVersion: apiVersion, Name: "t"}
		h.Spec.MinReplicas = ptr.To(minReplicas)
		if describedVersion != "" {
			h.Spec.Metrics = []autoscaling.MetricSpec{{Type: autoscaling.ObjectMetricSourceType, Object: &autoscaling.ObjectMetricSource{
				DescribedObject: autoscaling.CrossVersionObjectReference{Kind: "Ingress", Name: "i", APIVersion: describedVersion},
			}}}
		}
		return h
	}
	semanticsAt(t, "1.36").gates.Do(func() {
		o := hpaValidationOptions(hpa("Deployment", "apps/v1", 1, ""), nil)
		if o.MinReplicasLowerBound != 1 || o.ScaleTargetRefValidationOptions.AllowInvalidAPIVersion || o.ScaleTargetRefValidationOptions.AllowEmptyAPIGroup ||
			!o.ScaleTargetRefValidationOptions.RequiredCoveredByDeclarative || !o.ObjectMetricsValidationOptions.AllowEmptyAPIGroup || o.ObjectMetricsValidationOptions.AllowInvalidAPIVersion {
			t.Errorf("create options at 1.36: %+v", o)
		}
		if o := hpaValidationOptions(hpa("ReplicationController", "v1", 1, ""), nil); !o.ScaleTargetRefValidationOptions.AllowEmptyAPIGroup {
			t.Errorf("a ReplicationController target: %+v", o)
		}
		old := hpa("Deployment", "extensions/v1beta1/x", 0, "a/b/c")
		o = hpaValidationOptions(hpa("Deployment", "extensions/v1beta1/x", 2, ""), old)
		if o.MinReplicasLowerBound != 0 || !o.ScaleTargetRefValidationOptions.AllowInvalidAPIVersion || !o.ObjectMetricsValidationOptions.AllowInvalidAPIVersion {
			t.Errorf("an update keeping what the stored autoscaler has: %+v", o)
		}
		if cfg := hpaDeclarative(t.Context(), nil, nil); cfg.Options["HPAScaleToZero"] {
			t.Errorf("declarative options on create at 1.36: %v", cfg.Options)
		}
		if cfg := hpaDeclarative(t.Context(), nil, old); !cfg.Options["HPAScaleToZero"] {
			t.Errorf("declarative options of an update from zero at 1.36: %v", cfg.Options)
		}
	})
	semanticsAt(t, "1.37").gates.Do(func() {
		if o := hpaValidationOptions(hpa("Deployment", "apps/v1", 1, ""), nil); o.MinReplicasLowerBound != 0 {
			t.Errorf("create options at 1.37: %+v", o)
		}
		if cfg := hpaDeclarative(t.Context(), nil, nil); !cfg.Options["HPAScaleToZero"] {
			t.Errorf("declarative options at 1.37: %v", cfg.Options)
		}
	})
}

// Without HPAConfigurableTolerance (1.34), a new tolerance is dropped, one already
// stored kept.
func TestDropHPATolerance(t *testing.T) {
	tolerant := func() *autoscaling.HorizontalPodAutoscaler {
		q := resource.MustParse("0.1")
		return &autoscaling.HorizontalPodAutoscaler{Spec: autoscaling.HorizontalPodAutoscalerSpec{Behavior: &autoscaling.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscaling.HPAScalingRules{Tolerance: &q},
		}}}
	}
	semanticsAt(t, "1.34").gates.Do(func() {
		h := tolerant()
		dropHPATolerance(h, nil)
		if h.Spec.Behavior.ScaleDown.Tolerance != nil {
			t.Error("a new tolerance kept without its gate")
		}
		h = tolerant()
		dropHPATolerance(h, tolerant())
		if h.Spec.Behavior.ScaleDown.Tolerance == nil {
			t.Error("a stored tolerance dropped")
		}
	})
	if setsTolerance(nil) || setsTolerance(&autoscaling.HorizontalPodAutoscaler{}) || !setsTolerance(tolerant()) {
		t.Error("setsTolerance")
	}
}
