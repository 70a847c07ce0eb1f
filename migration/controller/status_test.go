package controller

import (
	"strings"
	"testing"

	migrationapi "github.com/concordproject/concord/migration/api"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The progress is read from status.progress where the API keeps it, else from the
// annotation; the annotation keeps the first failures, their reasons cut short.
func TestProgressOf(t *testing.T) {
	total := int64(500)
	p := &migrationapi.Progress{Path: migrationapi.PathClient, Total: &total, Migrated: 120, Skipped: 3, Failed: 12, Continue: "token"}
	for i := range 12 {
		p.Failures = append(p.Failures, migrationapi.ObjectFailure{Namespace: "ns", Name: strings.Repeat("x", i+1), Reason: strings.Repeat("r", 1000)})
	}
	v, err := progressAnnotation(p)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetAnnotations(map[string]string{AnnotationProgress: v})
	got := ProgressOf(u)
	if got == nil || got.Migrated != 120 || got.Skipped != 3 || got.Failed != 12 || *got.Total != 500 || got.Continue != "token" || got.Path != migrationapi.PathClient {
		t.Fatalf("from the annotation: %+v", got)
	}
	if len(got.Failures) != maxAnnotatedFailures || len(got.Failures[0].Reason) != maxAnnotatedReason+3 {
		t.Errorf("the annotation keeps %d failures, the first reason %d bytes long", len(got.Failures), len(got.Failures[0].Reason))
	}

	if err := unstructured.SetNestedField(u.Object, map[string]interface{}{"migrated": int64(7), "skipped": int64(0), "failed": int64(0)}, "status", "progress"); err != nil {
		t.Fatal(err)
	}
	if got := ProgressOf(u); got == nil || got.Migrated != 7 {
		t.Errorf("status.progress is preferred: %+v", got)
	}
	if got := ProgressOf(&unstructured.Unstructured{Object: map[string]interface{}{}}); got != nil {
		t.Errorf("no progress: %+v", got)
	}
}
