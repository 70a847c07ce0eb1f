package trigger

import (
	"testing"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/discovery"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// svm is a StorageVersionMigration of widgets.example.com as the informer hands it.
func svm(uid types.UID, annotations map[string]interface{}, status map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]interface{}{"name": "m-" + string(uid), "uid": string(uid)},
		"spec":     map[string]interface{}{"resource": map[string]interface{}{"group": "example.com", "resource": "widgets"}},
	}}
	if annotations != nil {
		_ = unstructured.SetNestedMap(u.Object, annotations, "metadata", "annotations")
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// Only migrations of someone else seen pending are sighted, once, and forgotten when
// deleted.
func TestSightings(t *testing.T) {
	tr := &Trigger{res: discovery.New(nil), sightings: map[types.UID]sighting{}}
	h := tr.sightingHandler()
	h.OnAdd(svm("pending", nil, nil), false)
	h.OnAdd(svm("empty-status", nil, map[string]interface{}{}), false)
	h.OnAdd(svm("running", nil, map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Running", "status": "True"}}}), false)
	h.OnAdd(svm("mine", map[string]interface{}{migrationapi.AnnotationStorageVersionHash: "h"}, nil), false)
	for uid, want := range map[types.UID]bool{"pending": true, "empty-status": true, "running": false, "mine": false} {
		if got := tr.sightingOf(uid) != nil; got != want {
			t.Errorf("%s sighted: %v, want %v", uid, got, want)
		}
	}

	// A later sighting does not replace the first.
	tr.mu.Lock()
	tr.sightings["pending"] = sighting{StorageVersionRV: "7"}
	tr.mu.Unlock()
	h.OnUpdate(nil, svm("pending", nil, nil))
	if s := tr.sightingOf("pending"); s == nil || s.StorageVersionRV != "7" {
		t.Errorf("the first sighting was replaced: %+v", s)
	}

	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "m-pending", Obj: svm("pending", nil, nil)})
	if tr.sightingOf("pending") != nil {
		t.Error("a deleted migration is still sighted")
	}
}
