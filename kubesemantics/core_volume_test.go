package kubesemantics

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/core"
)

// fixedClock makes the strategies' clock answer at, until the test ends.
func fixedClock(t *testing.T, at time.Time) {
	t.Helper()
	was := now
	now = func() metav1.Time { return metav1.NewTime(at) }
	t.Cleanup(func() { now = was })
}

func TestPersistentVolumes(t *testing.T) {
	fixedClock(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r := unserved(t, "persistentvolumes", "PersistentVolume", false, true)
	spec := map[string]any{"capacity": map[string]any{"storage": "1Gi"}, "accessModes": []any{"ReadWriteOnce"},
		"hostPath": map[string]any{"path": "/data"}}
	pv := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("pv", ""), "spec": spec, "status": map[string]any{"phase": "Bound"}})
	if str(pv, "status", "phase") != "Pending" || str(pv, "status", "lastPhaseTransitionTime") != "2026-01-02T03:04:05Z" {
		t.Errorf("a new PersistentVolume's status: %v", pv.Object["status"])
	}
	if str(pv, "spec", "persistentVolumeReclaimPolicy") != "Retain" || str(pv, "spec", "volumeMode") != "Filesystem" {
		t.Errorf("defaults: %v", pv.Object["spec"])
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("pv2", ""), "spec": map[string]any{"hostPath": map[string]any{"path": "/data/../etc"}}})
	wantErrs(t, res.errs, fieldErr{required, "spec.capacity"}, fieldErr{notSupported, "spec.capacity"}, fieldErr{required, "spec.accessModes"},
		fieldErr{invalid, "spec.hostPath.path"})

	res = coreUpdate(t, r, "v1", "", edit(pv, func(o map[string]any) { o["status"] = map[string]any{"phase": "Failed"} }), pv)
	if len(res.errs) > 0 || str(res.obj, "status", "phase") != "Pending" {
		t.Errorf("an update: %v, status %v", res.errs, res.obj.Object["status"])
	}
	res = coreUpdate(t, r, "v1", "", edit(pv, func(o map[string]any) { o["spec"].(map[string]any)["hostPath"] = map[string]any{"path": "/other"} }), pv)
	wantErrs(t, res.errs, fieldErr{forbidden, "spec.persistentvolumesource"})
	fixedClock(t, time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC))
	res = coreUpdate(t, r, "v1", "status", edit(pv, func(o map[string]any) {
		o["status"] = map[string]any{"phase": "Available"}
		o["spec"].(map[string]any)["capacity"] = map[string]any{"storage": "2Gi"}
	}), pv)
	if len(res.errs) > 0 || str(res.obj, "status", "lastPhaseTransitionTime") != "2026-01-02T04:00:00Z" || str(res.obj, "spec", "capacity", "storage") != "1Gi" {
		t.Errorf("a status update: %v, %v", res.errs, res.obj.Object)
	}
}

// A status update records when the phase changes, unless the client says when.
func TestPreparePVStatus(t *testing.T) {
	t0, t1, t2 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0)), time.Unix(300, 0)
	fixedClock(t, t2)
	old := &core.PersistentVolume{Status: core.PersistentVolumeStatus{Phase: core.VolumeAvailable, LastPhaseTransitionTime: &t0}}
	for _, tc := range []struct {
		name  string
		phase core.PersistentVolumePhase
		sent  *metav1.Time
		want  time.Time
	}{
		{"same phase, no time", core.VolumeAvailable, nil, t0.Time},
		{"same phase, a time", core.VolumeAvailable, &t1, t1.Time},
		{"new phase, no time", core.VolumeBound, nil, t2},
		{"new phase, the old time", core.VolumeBound, &t0, t2},
		{"new phase, a new time", core.VolumeBound, &t1, t1.Time},
	} {
		pv := &core.PersistentVolume{Status: core.PersistentVolumeStatus{Phase: tc.phase, LastPhaseTransitionTime: tc.sent}}
		preparePVStatus(t.Context(), pv, old)
		if got := pv.Status.LastPhaseTransitionTime; got == nil || !got.Time.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPersistentVolumeClaims(t *testing.T) {
	r := unserved(t, "persistentvolumeclaims", "PersistentVolumeClaim", true, true)
	c := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("c", "ns"), "spec": map[string]any{
		"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}},
		"dataSource": map[string]any{"kind": "PersistentVolumeClaim", "name": "src"}},
		"status": map[string]any{"phase": "Bound"}})
	// The status is reset, then defaulted as kube-apiserver answers it: phase Pending.
	if str(c, "status", "phase") != "Pending" || str(c, "spec", "dataSourceRef", "name") != "src" || str(c, "spec", "volumeMode") != "Filesystem" {
		t.Errorf("a new claim: status reset to phase Pending, dataSourceRef from dataSource, volumeMode defaulted: %v", c.Object)
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("c", "ns"), "spec": map[string]any{}})
	wantErrs(t, res.errs, fieldErr{required, "spec.accessModes"}, fieldErr{required, "spec.resources[storage]"})

	changed := edit(c, func(o map[string]any) {
		o["status"] = map[string]any{"phase": "Bound", "capacity": map[string]any{"storage": "1Gi"}}
		o["spec"].(map[string]any)["volumeName"] = "pv"
	})
	res = coreUpdate(t, r, "v1", "", changed, c)
	if len(res.errs) > 0 || str(res.obj, "status", "phase") != "Pending" || str(res.obj, "spec", "volumeName") != "pv" {
		t.Errorf("an update: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "status", changed, c)
	if len(res.errs) > 0 || str(res.obj, "status", "phase") != "Bound" || has(res.obj, "spec", "volumeName") {
		t.Errorf("a status update: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "", edit(c, func(o map[string]any) { o["spec"].(map[string]any)["accessModes"] = []any{"ReadOnlyMany"} }), c)
	wantErrs(t, res.errs, fieldErr{forbidden, "spec"})
}
