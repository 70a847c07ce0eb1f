package controller

import (
	"testing"

	migrationapi "github.com/concordproject/concord/migration/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
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

// A migration this controller ended is not run again while its informer still shows
// it running (the status writes of its run queue it again before the informer sees
// the end): the Reconcile waits for the informer, whose event of the end comes next.
func TestEndedMigrationNotRunFromAStaleCache(t *testing.T) {
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	c := &Controller{informer: informer, running: map[string]running{}, ended: map[string]endWrite{}}
	migration := func(rv string, terminal bool) *unstructured.Unstructured {
		m := &migrationapi.StorageVersionMigration{}
		m.Name, m.UID, m.ResourceVersion = "widgets.example.com-1", "uid-1", rv
		m.Spec.Resource.Group, m.Spec.Resource.Resource = "example.com", "widgets"
		if terminal {
			m.Status.Conditions = []metav1.Condition{{Type: migrationapi.ConditionFailed, Status: metav1.ConditionTrue, Reason: "ObjectsFailed"}}
		}
		return &unstructured.Unstructured{Object: toObject(t, m)}
	}
	if err := informer.GetIndexer().Add(migration("10", false)); err != nil {
		t.Fatal(err)
	}
	c.wroteEnd(migration("12", true))
	// Were it run, the migration would need the clients this controller lacks.
	if _, err := c.Reconcile(t.Context(), "widgets.example.com-1"); err != nil {
		t.Fatal(err)
	}
	if _, remembered := c.ended["widgets.example.com-1"]; !remembered {
		t.Fatal("the end was forgotten before the informer saw it")
	}
	if err := informer.GetIndexer().Update(migration("12", true)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(t.Context(), "widgets.example.com-1"); err != nil {
		t.Fatal(err)
	}
	if _, remembered := c.ended["widgets.example.com-1"]; remembered {
		t.Error("the end is still remembered once the informer saw it")
	}
}
