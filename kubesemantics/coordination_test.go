package kubesemantics

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/apis/coordination"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"
)

func TestLeases(t *testing.T) {
	r := cpResource(t, "coordination.k8s.io", "leases")
	ctx := t.Context()
	lease := func(spec coordinationv1.LeaseSpec) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "holder", Namespace: "kube-system"}, Spec: spec}
	}
	created, errs := cpCreate(ctx, t, r, "v1", lease(coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15)}))
	cpWant(t, "a valid Lease", errs)
	_, errs = cpCreate(ctx, t, r, "v1", lease(coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](0), LeaseTransitions: ptr.To[int32](-1)}))
	cpWant(t, "a zero duration, negative transitions", errs, "spec.leaseDurationSeconds: Invalid value", "spec.leaseTransitions: Invalid value")
	held, errs := cpCreate(ctx, t, r, "v1beta1", &coordinationv1beta1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns"},
		Spec: coordinationv1beta1.LeaseSpec{PreferredHolder: ptr.To("b")}})
	cpWant(t, "v1beta1, a preferred holder while CoordinatedLeaderElection is off (1.37's default)", errs)
	if _, found, _ := unstructured.NestedString(held.Object, "spec", "preferredHolder"); found {
		t.Errorf("the preferred holder was kept: %v", held.Object["spec"])
	}
	update := lease(coordinationv1.LeaseSpec{HolderIdentity: ptr.To("b"), LeaseDurationSeconds: ptr.To[int32](-3)})
	update.ResourceVersion = "2"
	_, errs = cpUpdate(ctx, t, r, "v1", "", update, created)
	cpWant(t, "an update to a negative duration", errs, "spec.leaseDurationSeconds: Invalid value")
}

// While CoordinatedLeaderElection is off, a Lease's strategy and preferred holder
// are dropped unless the stored Lease has them.
func TestLeaseDropsCoordinatedElection(t *testing.T) {
	concord := utilfeature.DefaultMutableFeatureGate.DeepCopyAndReset()
	if err := concord.SetFromMap(map[string]bool{string(features.CoordinatedLeaderElection): false}); err != nil {
		t.Fatal(err)
	}
	off, err := NewGates(version.MustParse("1.37"), version.MustParse("1.36"), concord)
	if err != nil {
		t.Fatal(err)
	}
	strategy := coordination.OldestEmulationVersion
	full := func() *coordination.LeaseSpec {
		return &coordination.LeaseSpec{Strategy: &strategy, PreferredHolder: ptr.To("b")}
	}
	off.Do(func() {
		spec := full()
		dropCoordinatedElection(spec, nil)
		if spec.Strategy != nil || spec.PreferredHolder != nil {
			t.Errorf("a new Lease keeps %+v", spec)
		}
		spec = full()
		dropCoordinatedElection(spec, &coordination.LeaseSpec{Strategy: &strategy})
		if spec.Strategy == nil || spec.PreferredHolder != nil {
			t.Errorf("an update of a Lease with a strategy only keeps %+v", spec)
		}
	})
	if err := concord.SetFromMap(map[string]bool{string(features.CoordinatedLeaderElection): true}); err != nil {
		t.Fatal(err)
	}
	on, err := NewGates(version.MustParse("1.37"), version.MustParse("1.36"), concord)
	if err != nil {
		t.Fatal(err)
	}
	on.Do(func() {
		spec := full()
		dropCoordinatedElection(spec, nil)
		if spec.Strategy == nil || spec.PreferredHolder == nil {
			t.Errorf("with the gate on, a new Lease keeps only %+v", spec)
		}
	})
}

func TestLeaseCandidates(t *testing.T) {
	// The catalog's leasecandidates have v1alpha1 too, which kube 1.37 no longer
	// knows: Configure leaves the served resource alone.
	if cpSemantics(t).Configure(cpResourceUnconfigured(t, "coordination.k8s.io", "leasecandidates")) {
		t.Log("the catalog's leasecandidates are now configured")
	}
	r := cpHandResource(t, "coordination.k8s.io", "leasecandidates", "LeaseCandidate", true, false, "v1beta1", "v1alpha2")
	ctx := t.Context()
	candidate := func(spec coordinationv1beta1.LeaseCandidateSpec) *coordinationv1beta1.LeaseCandidate {
		return &coordinationv1beta1.LeaseCandidate{ObjectMeta: metav1.ObjectMeta{Name: "kcm-a", Namespace: "kube-system"}, Spec: spec}
	}
	valid := coordinationv1beta1.LeaseCandidateSpec{LeaseName: "kcm", BinaryVersion: "1.37.0", EmulationVersion: "1.36.0",
		Strategy: coordinationv1.OldestEmulationVersion}
	created, errs := cpCreate(ctx, t, r, "v1beta1", candidate(valid))
	cpWant(t, "a valid LeaseCandidate", errs)
	_, errs = cpCreate(ctx, t, r, "v1beta1", candidate(coordinationv1beta1.LeaseCandidateSpec{BinaryVersion: "x", Strategy: coordinationv1.OldestEmulationVersion}))
	cpWant(t, "no lease name, a binary version that is none", errs, "spec.leaseName: Required value", "spec.binaryVersion: Invalid value",
		"spec.emulationVersion: Required value")
	moved := candidate(valid)
	moved.Spec.LeaseName, moved.ResourceVersion = "scheduler", "2"
	_, errs = cpUpdate(ctx, t, r, "v1beta1", "", moved, created)
	cpWant(t, "a changed lease name", errs, "spec.leaseName: Invalid value")
}
