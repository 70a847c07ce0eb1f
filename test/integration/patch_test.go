package integration

import (
	"strings"
	"testing"

	"github.com/concordproject/concord/harness"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	flowcontrolv1ac "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
)

func patchTypes(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, configMap("p", map[string]string{"a": "1", "b": "2"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		pt    types.PatchType
		patch string
		want  map[string]string
	}{
		{types.MergePatchType, `{"data":{"b":null,"c":"3"}}`, map[string]string{"a": "1", "c": "3"}},
		{types.JSONPatchType, `[{"op":"replace","path":"/data/a","value":"10"}]`, map[string]string{"a": "10", "c": "3"}},
		{types.StrategicMergePatchType, `{"data":{"d":"4"}}`, map[string]string{"a": "10", "c": "3", "d": "4"}},
	}
	for _, tc := range cases {
		got, err := cms.Patch(ctx, "p", tc.pt, []byte(tc.patch), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.pt, err)
		}
		if len(got.Data) != len(tc.want) {
			t.Fatalf("%s: data %v, want %v", tc.pt, got.Data, tc.want)
		}
		for k, v := range tc.want {
			if got.Data[k] != v {
				t.Fatalf("%s: data %v, want %v", tc.pt, got.Data, tc.want)
			}
		}
	}
	if _, err := cms.Patch(ctx, "p", types.JSONPatchType, []byte(`[{"op":"test","path":"/data/a","value":"nope"}]`), metav1.PatchOptions{}); err == nil {
		t.Fatal("failing JSON patch test op accepted")
	}
	if _, err := cms.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); err == nil {
		t.Fatal("patch of a missing object accepted")
	}
}

func serverSideApply(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps(ns)

	applied, err := cms.Apply(ctx, corev1ac.ConfigMap("ssa", ns).WithData(map[string]string{"owned-by-a": "1"}), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply (create): %v", err)
	}
	if len(applied.ManagedFields) != 1 || applied.ManagedFields[0].Manager != "alice" || applied.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managedFields after create: %+v", applied.ManagedFields)
	}
	if _, err := cms.Apply(ctx, corev1ac.ConfigMap("ssa", ns).WithData(map[string]string{"owned-by-b": "2"}), metav1.ApplyOptions{FieldManager: "bob"}); err != nil {
		t.Fatalf("second manager: %v", err)
	}
	// Bob taking Alice's field conflicts unless forced.
	_, err = cms.Apply(ctx, corev1ac.ConfigMap("ssa", ns).WithData(map[string]string{"owned-by-a": "changed"}), metav1.ApplyOptions{FieldManager: "bob"})
	if err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Fatalf("conflicting apply: got %v, want a conflict", err)
	}
	forced, err := cms.Apply(ctx, corev1ac.ConfigMap("ssa", ns).WithData(map[string]string{"owned-by-a": "changed", "owned-by-b": "2"}), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if forced.Data["owned-by-a"] != "changed" {
		t.Fatalf("forced apply data %v", forced.Data)
	}
	// An update through PUT is tracked as an Update by its manager.
	forced.Data["plain"] = "x"
	upd, err := cms.Update(ctx, forced, metav1.UpdateOptions{FieldManager: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range upd.ManagedFields {
		found = found || (mf.Manager == "carol" && mf.Operation == metav1.ManagedFieldsOperationUpdate)
	}
	if !found {
		t.Fatalf("PUT not tracked: %+v", upd.ManagedFields)
	}
	// Apply without a field manager is refused.
	_, err = cms.Patch(ctx, "ssa", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"}}`), metav1.PatchOptions{})
	if err == nil {
		t.Fatal("apply without fieldManager accepted")
	}
}

// A JSON patch sees a built-in object as Kubernetes renders its Go type: an object
// whose status was never written has an empty status to add paths to.
func TestJSONPatchOfAnEmptyStatus(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	cronJobs := c.Servers[0].Clientset(t).BatchV1().CronJobs("default")
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}}}},
	}
	if _, err := cronJobs.Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := `[{"op":"add","path":"/status/lastScheduleTime","value":"2026-01-01T03:00:00Z"}]`
	got, err := cronJobs.Patch(ctx, "nightly", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil || got.Status.LastScheduleTime == nil || got.Status.LastScheduleTime.Year() != 2026 {
		t.Fatalf("JSON patch adding to an empty status: %v, %+v", err, got.Status)
	}
}

// A write through a subresource never creates a missing object, as in Kubernetes: a
// server-side apply of a deleted FlowSchema's status (as the API priority and
// fairness controller applies its Dangling condition, racing a deletion) answers 404,
// and the FlowSchema stays deleted.
func subresourceWritesDoNotCreate(t *testing.T, c *harness.Cluster, _ string) {
	ctx := t.Context()
	cs := c.Servers[0].Clientset(t)
	schemas := cs.FlowcontrolV1().FlowSchemas()
	status := flowcontrolv1ac.FlowSchemaStatus().WithConditions(flowcontrolv1ac.FlowSchemaCondition().
		WithType("Dangling").WithStatus(flowcontrolv1.ConditionFalse).WithReason("Found").WithMessage("e2e"))
	_, err := schemas.ApplyStatus(ctx, flowcontrolv1ac.FlowSchema("deleted").WithStatus(status), metav1.ApplyOptions{FieldManager: "api-priority-and-fairness-config-consumer-v1", Force: true})
	if !apierrors.IsNotFound(err) {
		t.Errorf("apply of a missing FlowSchema's status: %v, want 404", err)
	}
	if _, err := schemas.Get(ctx, "deleted", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the FlowSchema after an apply of its status: %v, want it absent", err)
	}
}
