package migration

import (
	"bytes"
	"strings"
	"testing"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/controller"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Where the API keeps no status.progress (Kubernetes' built-in API), the counts come
// from the annotation the controller writes there instead.
func TestMigrationsFromAnnotation(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]interface{}{"name": "widgets.example.com-1", "annotations": map[string]interface{}{
			controller.AnnotationProgress: `{"path":"client","total":30,"migrated":28,"skipped":2,"failed":0}`,
		}},
		"spec": map[string]interface{}{"resource": map[string]interface{}{"group": "example.com", "resource": "widgets"}},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
			"type": migrationapi.ConditionSucceeded, "status": "True", "reason": migrationapi.ReasonMigrationCompleted,
			"message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}},
	}}
	var out bytes.Buffer
	if err := PrintMigrations(&out, decodeMigrations([]*unstructured.Unstructured{u}), "", time.Now()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	// RESOURCE PHASE PROGRESS MIGRATED SKIPPED FAILED TOTAL AGE NAME
	if f := strings.Fields(lines[1]); len(f) != 9 || f[1] != "Succeeded" || f[3] != "28" || f[4] != "2" || f[6] != "30" {
		t.Errorf("got\n%s", out.String())
	}
}
