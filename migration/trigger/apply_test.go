package trigger

import (
	"context"
	"testing"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// A reconcile planned from a cache that has not yet seen the StorageState (the
// reconcile right after the one that created it and launched a migration) touches no
// migration: the state's creation fails first, and the reconcile is retried.
func TestApplyFromStaleCacheTouchesNoMigration(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	state := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": migrationapi.StorageStates.GroupVersion().String(), "kind": "StorageState",
		"metadata": map[string]interface{}{"name": migrationapi.StorageStateName(gr)},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		migrationapi.StorageStates:            "StorageStateList",
		migrationapi.StorageVersionMigrations: "StorageVersionMigrationList",
	}, state)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tr := &Trigger{dyn: dyn, now: func() time.Time { return now }, history: 10,
		cfg:    lifecycleConfig{Heartbeat: time.Minute, Staleness: time.Hour, RetryFailed: time.Minute},
		expect: map[schema.GroupResource]expectation{}}
	running := migrationSummary{Name: migrationName(migrationapi.StorageStateName(gr), 1), Hash: "h1", Phase: migrationapi.ConditionRunning, Triggered: true, Sequence: 1}

	// The cache shows the migration just launched but not the state created with it.
	_, err := tr.apply(context.Background(), gr, nil, observation{Agreed: true, Current: "h1", Reported: []string{"h1"}}, []migrationSummary{running})
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("apply from a cache without the state: %v, want the state's creation to fail with AlreadyExists", err)
	}
	for _, a := range dyn.Actions() {
		if a.GetResource() == migrationapi.StorageVersionMigrations && a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("a migration was touched on a stale view: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// A settled resource (persisted is just the current hash) whose StorageVersion object
// moved since its last migration reads nothing of the object's history: Carried
// would change nothing.
func TestApplySettledReadsNoHistory(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	state := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": migrationapi.StorageStates.GroupVersion().String(), "kind": "StorageState",
		"metadata": map[string]interface{}{"name": migrationapi.StorageStateName(gr), "resourceVersion": "5"},
		"status": map[string]interface{}{"persistedStorageVersionHashes": []interface{}{"h1"}, "currentStorageVersionHash": "h1",
			"lastHeartbeatTime": now.Add(-time.Minute).Format(time.RFC3339)},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		migrationapi.StorageStates:            "StorageStateList",
		migrationapi.StorageVersionMigrations: "StorageVersionMigrationList",
		migrationapi.StorageVersions:          "StorageVersionList",
	}, state)
	tr := &Trigger{dyn: dyn, now: func() time.Time { return now }, history: 10,
		cfg:    lifecycleConfig{Heartbeat: time.Hour, Staleness: 2 * time.Hour, RetryFailed: time.Minute},
		expect: map[schema.GroupResource]expectation{}}
	done := migrationSummary{Name: migrationName(migrationapi.StorageStateName(gr), 1), Hash: "h1", StorageVersionRV: "10",
		Phase: migrationapi.ConditionSucceeded, Triggered: true, Sequence: 1}
	obs := observation{Agreed: true, Current: "h1", Reported: []string{"h1"}, ResourceVersion: "42"}
	if _, err := tr.apply(context.Background(), gr, state, obs, []migrationSummary{done}); err != nil {
		t.Fatal(err)
	}
	for _, a := range dyn.Actions() {
		if a.GetResource() == migrationapi.StorageVersions {
			t.Errorf("a settled state read the StorageVersion object: %s", a.GetVerb())
		}
	}
}
