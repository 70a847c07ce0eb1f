package controller

import (
	"testing"

	"github.com/concordproject/concord/migration/api"
	"k8s.io/apimachinery/pkg/runtime"
)

// The status the controller writes passes the rules a Kubernetes server applies to
// StorageVersionMigrations (metav1.Condition validation among them).
func TestMigrationStatusAsWritten(t *testing.T) {
	m := &api.StorageVersionMigration{}
	m.Spec.Resource.Resource = "widgets"
	m.Spec.Resource.Group = "example.com"
	before := toObject(t, m)
	setRunning(&m.Status, 1, checkpointFrom(&api.Progress{}, ""))
	running := toObject(t, m)
	if errs := api.ValidateMigrationUpdate(running, before); len(errs) > 0 {
		t.Errorf("Running refused: %v", errs)
	}
	m.Status.ResourceVersion = "1234"
	withRV := toObject(t, m)
	if errs := api.ValidateMigrationUpdate(withRV, running); len(errs) > 0 {
		t.Errorf("status.resourceVersion refused: %v", errs)
	}
	if api.WellFormedResourceVersion("") || api.WellFormedResourceVersion("0") || !api.WellFormedResourceVersion("1234") {
		t.Error("WellFormedResourceVersion disagrees with Kubernetes' resource version rule")
	}
}

func toObject(t *testing.T, m *api.StorageVersionMigration) map[string]interface{} {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
