package controller

import (
	"testing"

	migrationapi "github.com/concordproject/concord/migration/api"
	"k8s.io/apimachinery/pkg/runtime"
)

// The status the controller writes passes the rules a Kubernetes server applies to
// StorageVersionMigrations (metav1.Condition validation among them).
func TestMigrationStatusAsWritten(t *testing.T) {
	m := &migrationapi.StorageVersionMigration{}
	m.Spec.Resource.Resource = "widgets"
	m.Spec.Resource.Group = "example.com"
	before := toObject(t, m)
	setRunning(&m.Status, 1, checkpointFrom(&migrationapi.Progress{}, ""))
	running := toObject(t, m)
	if errs := migrationapi.ValidateMigrationUpdate(running, before); len(errs) > 0 {
		t.Errorf("Running refused: %v", errs)
	}
	m.Status.ResourceVersion = "1234"
	withRV := toObject(t, m)
	if errs := migrationapi.ValidateMigrationUpdate(withRV, running); len(errs) > 0 {
		t.Errorf("status.resourceVersion refused: %v", errs)
	}
	if migrationapi.WellFormedResourceVersion("") || migrationapi.WellFormedResourceVersion("0") || !migrationapi.WellFormedResourceVersion("1234") {
		t.Error("WellFormedResourceVersion disagrees with Kubernetes' resource version rule")
	}
}

func toObject(t *testing.T, m *migrationapi.StorageVersionMigration) map[string]interface{} {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
