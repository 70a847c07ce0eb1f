package integration

import (
	"net/http"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The built-in StorageVersionMigration has Kubernetes' validation: a create without
// spec.resource.resource, a change of spec, of a set status.resourceVersion, Running
// True beside Succeeded, and Succeeded set back to False are all 422 Invalid with the
// offending field as a cause, and write nothing; the sequence a migrator writes
// (Running, the resourceVersion, Running False with Succeeded) is accepted. The
// in-process migration controllers are off, so the test alone writes the status.
func TestSVMValidation(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.DisableStorageMigration = true }))
	ctx := t.Context()
	client := c.Servers[0].Clientset(t).StoragemigrationV1().StorageVersionMigrations()

	// invalid checks that err is a 422 Invalid metav1.Status with the cause
	// field: ...fragment...
	invalid := func(what string, err error, field, fragment string) {
		t.Helper()
		var st apierrors.APIStatus
		if !errorsAs(err, &st) {
			t.Fatalf("%s: got %v, want 422 Invalid", what, err)
		}
		s := st.Status()
		if s.Code != http.StatusUnprocessableEntity || s.Reason != metav1.StatusReasonInvalid || s.Details == nil {
			t.Fatalf("%s: got %d %s (%v), want 422 Invalid with details", what, s.Code, s.Reason, err)
		}
		if s.Details.Kind != "StorageVersionMigration" || s.Details.Group != svmv1.GroupName {
			t.Errorf("%s: details name %s.%s, want StorageVersionMigration.%s", what, s.Details.Kind, s.Details.Group, svmv1.GroupName)
		}
		if !hasCause(err, field, fragment) {
			t.Fatalf("%s: causes %q, want %s: ...%s...", what, statusCauses(err), field, fragment)
		}
	}
	// unchanged checks that the stored object is still want.
	unchanged := func(what string, want *svmv1.StorageVersionMigration) {
		t.Helper()
		got, err := client.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got.ResourceVersion != want.ResourceVersion || !equality.Semantic.DeepEqual(got.Spec, want.Spec) ||
			!equality.Semantic.DeepEqual(got.Status, want.Status) {
			t.Fatalf("%s was written: now %+v at %s, want %+v at %s", what, got.Status, got.ResourceVersion, want.Status, want.ResourceVersion)
		}
	}
	setCondition := func(m *svmv1.StorageVersionMigration, typ svmv1.MigrationConditionType, status metav1.ConditionStatus) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: string(typ), Status: status, Reason: "Test", Message: "set by the test"})
	}

	// Create without spec.resource.resource.
	_, err := client.Create(ctx, &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "no-resource"},
		Spec:       svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps"}},
	}, metav1.CreateOptions{})
	invalid("create without spec.resource.resource", err, "spec.resource.resource", "resource is required to be set")
	if _, err := client.Get(ctx, "no-resource", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused migration was stored: %v", err)
	}

	// A valid create; the status it carries is dropped, as in Kubernetes.
	withStatus := &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "configmaps-1"},
		Spec:       svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Resource: "configmaps"}},
	}
	setCondition(withStatus, svmv1.MigrationSucceeded, metav1.ConditionTrue)
	m, err := client.Create(ctx, withStatus, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("valid create: %v", err)
	}
	if len(m.Status.Conditions) != 0 || m.Status.ResourceVersion != "" {
		t.Fatalf("create kept a status: %+v", m.Status)
	}

	// spec is immutable.
	next := m.DeepCopy()
	next.Spec.Resource.Resource = "secrets"
	_, err = client.Update(ctx, next, metav1.UpdateOptions{})
	invalid("changing spec", err, "spec", "field is immutable")
	unchanged("the migration after a spec change", m)

	// The migrator starts: Running, then the resourceVersion it started at.
	next = m.DeepCopy()
	setCondition(next, svmv1.MigrationRunning, metav1.ConditionTrue)
	if m, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("Running: %v", err)
	}
	next = m.DeepCopy()
	next.Status.ResourceVersion = "12345"
	if m, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting status.resourceVersion: %v", err)
	}

	// Illegal status updates, each refused whole.
	next = m.DeepCopy()
	setCondition(next, svmv1.MigrationSucceeded, metav1.ConditionTrue)
	_, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	invalid("Succeeded while Running", err, "status.conditions", "Running condition cannot be true when success condition is true")
	unchanged("the migration after Succeeded while Running", m)

	next = m.DeepCopy()
	next.Status.ResourceVersion = "12346"
	setCondition(next, svmv1.MigrationRunning, metav1.ConditionFalse)
	_, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	invalid("changing status.resourceVersion", err, "status.resourceVersion", "field is immutable")
	unchanged("the migration after a status.resourceVersion change", m)

	next = m.DeepCopy()
	next.Status.Conditions[0].Reason = "not a reason"
	_, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	invalid("a malformed condition reason", err, "status.conditions[0].reason", "a condition reason must start with alphabetic character")
	unchanged("the migration after a malformed condition", m)

	// The migrator ends: Running False and Succeeded in one write.
	next = m.DeepCopy()
	setCondition(next, svmv1.MigrationRunning, metav1.ConditionFalse)
	setCondition(next, svmv1.MigrationSucceeded, metav1.ConditionTrue)
	if m, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("Succeeded: %v", err)
	}
	if !meta.IsStatusConditionTrue(m.Status.Conditions, string(svmv1.MigrationSucceeded)) || m.Status.ResourceVersion != "12345" {
		t.Fatalf("after success: %+v", m.Status)
	}

	// Succeeded is final.
	next = m.DeepCopy()
	setCondition(next, svmv1.MigrationSucceeded, metav1.ConditionFalse)
	setCondition(next, svmv1.MigrationRunning, metav1.ConditionTrue)
	_, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	invalid("Succeeded set back to False", err, "status.conditions", "Success condition cannot be set to false once it is true")
	unchanged("the succeeded migration", m)

	// The main resource keeps the status as stored, whatever the request says, and
	// metadata may still change.
	next = m.DeepCopy()
	next.Status = svmv1.StorageVersionMigrationStatus{}
	next.Labels = map[string]string{"checked": "yes"}
	got, err := client.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("labelling the succeeded migration: %v", err)
	}
	if got.Labels["checked"] != "yes" || !equality.Semantic.DeepEqual(got.Status, m.Status) {
		t.Fatalf("update of the main resource: labels %v, status %+v, want the stored status %+v", got.Labels, got.Status, m.Status)
	}
}
