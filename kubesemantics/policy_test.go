package kubesemantics

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/policy"
)

const pdbManifest = `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
status: {disruptionsAllowed: 4}
`

// PodDisruptionBudgets: a reset status and generation 1; kube's errors; the
// generation of a spec change; a stored selector's invalid label value kept by an
// update; the status's checks.
func TestPodDisruptionBudgets(t *testing.T) {
	r := catalogResource(t, semanticsAt(t, "1.37"), "policy", "poddisruptionbudgets")
	p := mustCreate(t, r, "v1", pdbManifest)
	wantField(t, p, "metadata.generation", 1)
	wantField(t, p, "status", map[string]any{"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
	for _, tc := range []struct {
		name, path string
		value      any
		want       []string
	}{
		{"both minAvailable and maxUnavailable", "spec.maxUnavailable", int64(1), []string{"spec: Invalid value"}},
		{"more than all", "spec.minAvailable", "150%", []string{"spec.minAvailable: Invalid value"}},
		{"negative", "spec.minAvailable", int64(-1), []string{"spec.minAvailable: Invalid value"}},
		{"unknown eviction policy", "spec.unhealthyPodEvictionPolicy", "Sometimes", []string{"spec.unhealthyPodEvictionPolicy: Unsupported value"}},
		{"invalid label value", "spec.selector.matchLabels.app", "not valid!", []string{"spec.selector.matchLabels: Invalid value"}},
	} {
		obj := object(t, pdbManifest)
		set(obj.Object, tc.path, tc.value)
		manifest, _ := obj.MarshalJSON()
		_, errs := create(t, r, "v1", string(manifest))
		wantErrors(t, tc.name, errs, tc.want...)
	}

	raised, errs := update(t, r, "v1", "", p, func(o map[string]any) { set(o, "spec.minAvailable", int64(2)); set(o, "status.expectedPods", int64(3)) })
	wantErrors(t, "raising minAvailable", errs)
	wantField(t, raised, "metadata.generation", 2)
	wantField(t, raised, "status.expectedPods", 0)
	labelled, errs := update(t, r, "v1", "", p, func(o map[string]any) { set(o, "metadata.labels", map[string]any{"a": "b"}) })
	wantErrors(t, "labelling", errs)
	wantField(t, labelled, "metadata.generation", 1)

	stored := p.DeepCopy()
	set(stored.Object, "spec.selector", map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{"not valid!"}}}})
	_, errs = update(t, r, "v1", "", stored, func(o map[string]any) { set(o, "spec.minAvailable", int64(2)) })
	wantErrors(t, "keeping a stored invalid label value", errs)
	_, errs = update(t, r, "v1", "", p, func(o map[string]any) {
		set(o, "spec.selector", map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{"not valid!"}}}})
	})
	wantErrors(t, "a new invalid label value", errs, "spec.selector.matchExpressions[0].values[0]: Invalid value")

	counted, errs := update(t, r, "v1", "status", p, func(o map[string]any) { set(o, "status.expectedPods", int64(3)); set(o, "spec.minAvailable", int64(3)) })
	wantErrors(t, "a status update", errs)
	wantField(t, counted, "status.expectedPods", 3)
	wantField(t, counted, "spec.minAvailable", 1)
	_, errs = update(t, r, "v1", "status", p, func(o map[string]any) { set(o, "status.disruptionsAllowed", int64(-1)) })
	wantErrors(t, "negative disruptions", errs, "status.disruptionsAllowed: Invalid value")
}

// policy/v1beta1 read an empty selector as selecting nothing: its conversion marks
// such a selector with a label expression, which a budget written in v1beta1 keeps
// and one that sets the expression among others in v1 loses.
func TestPodDisruptionBudgetsV1beta1(t *testing.T) {
	r := catalogResource(t, semanticsAt(t, "1.37"), "policy", "poddisruptionbudgets")
	none := mustCreate(t, r, "v1beta1", `
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: none, namespace: default}
spec: {minAvailable: 1, selector: {}}
`)
	wantField(t, none, "spec.selector", map[string]any{})
	marked := mustCreate(t, r, "v1", `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: marked, namespace: default}
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
    matchExpressions: [{key: `+policy.PDBV1beta1Label+`, operator: Exists}]
`)
	wantField(t, marked, "spec.selector", map[string]any{"matchLabels": map[string]any{"app": "web"}})
}

// stripV1beta1Selector leaves v1's match-none selector, and a selector an update
// keeps, as they are.
func TestStripV1beta1Selector(t *testing.T) {
	marker := metav1.LabelSelectorRequirement{Key: policy.PDBV1beta1Label, Operator: metav1.LabelSelectorOpExists}
	withMarker := func() *policy.PodDisruptionBudget {
		return &policy.PodDisruptionBudget{Spec: policy.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"a": "b"}, MatchExpressions: []metav1.LabelSelectorRequirement{marker},
		}}}
	}
	p := withMarker()
	stripV1beta1Selector(p, withMarker())
	if len(p.Spec.Selector.MatchExpressions) != 1 {
		t.Errorf("a kept selector changed: %+v", p.Spec.Selector)
	}
	p = &policy.PodDisruptionBudget{Spec: policy.PodDisruptionBudgetSpec{Selector: policy.NonV1beta1MatchNoneSelector.DeepCopy()}}
	stripV1beta1Selector(p, nil)
	if len(p.Spec.Selector.MatchExpressions) != 1 {
		t.Errorf("match-none selector changed: %+v", p.Spec.Selector)
	}
	p = withMarker()
	stripV1beta1Selector(p, nil)
	if len(p.Spec.Selector.MatchExpressions) != 0 {
		t.Errorf("marker kept: %+v", p.Spec.Selector)
	}
	stripV1beta1Selector(&policy.PodDisruptionBudget{}, nil) // no selector: nothing to do
}
