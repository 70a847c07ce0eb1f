package kubesemantics

import (
	"maps"
	"testing"

	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestStorageVersions(t *testing.T) {
	r := cpResource(t, "internal.apiserver.k8s.io", "storageversions")
	ctx := t.Context()
	entry := func(id, encoding string) apiserverinternalv1alpha1.ServerStorageVersion {
		return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: id, EncodingVersion: encoding,
			DecodableVersions: []string{"apps/v1", "apps/v1beta2"}, ServedVersions: []string{"apps/v1"}}
	}
	sv := func(name string, status apiserverinternalv1alpha1.StorageVersionStatus) *apiserverinternalv1alpha1.StorageVersion {
		return &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Status: status}
	}
	created, errs := cpCreate(ctx, t, r, "v1alpha1", sv("apps.deployments", apiserverinternalv1alpha1.StorageVersionStatus{
		StorageVersions: []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "apps/v1")}}))
	cpWant(t, "a valid StorageVersion", errs)
	if _, ok := created.Object["status"].(map[string]interface{})["storageVersions"]; ok {
		t.Errorf("created with the status sent: %v", created.Object["status"])
	}
	_, errs = cpCreate(ctx, t, r, "v1alpha1", sv("deployments", apiserverinternalv1alpha1.StorageVersionStatus{}))
	cpWant(t, "a name without a group", errs, "metadata.name: Invalid value")

	_, errs = cpUpdate(ctx, t, r, "v1alpha1", "status", sv("apps.deployments", apiserverinternalv1alpha1.StorageVersionStatus{
		StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "apps/v1"), entry("a", "apps/v1")},
		CommonEncodingVersion: ptr.To("apps/v1beta2"),
	}), created)
	cpWant(t, "a status with one server twice, a wrong common version", errs,
		"status.storageVersions[1].apiServerID: Duplicate value", "status.commonEncodingVersion: Invalid value")
	updated, errs := cpUpdate(ctx, t, r, "v1alpha1", "status", sv("apps.deployments", apiserverinternalv1alpha1.StorageVersionStatus{
		StorageVersions: []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "apps/v1")}, CommonEncodingVersion: ptr.To("apps/v1"),
	}), created)
	cpWant(t, "a valid status", errs)
	if updated.GetGeneration() != 0 {
		t.Errorf("generation %d, want none", updated.GetGeneration())
	}
}

// A status update may change no metadata but the annotation of the servers'
// encryption keys.
func TestStorageVersionStatusKeepsKeys(t *testing.T) {
	stored := metav1.ObjectMeta{Name: "apps.deployments", Labels: map[string]string{"l": "1"},
		Annotations: map[string]string{"a": "1", wire.AnnotationEncryptionKeys: "old"}}
	for _, tc := range []struct {
		name string
		sent map[string]string
		want map[string]string
	}{
		{"keys changed", map[string]string{"a": "2", wire.AnnotationEncryptionKeys: "new"}, map[string]string{"a": "1", wire.AnnotationEncryptionKeys: "new"}},
		{"keys removed", map[string]string{"a": "1"}, map[string]string{"a": "1"}},
		{"nothing sent", nil, map[string]string{"a": "1"}},
	} {
		meta := metav1.ObjectMeta{Name: stored.Name, Labels: map[string]string{"l": "2"}, Annotations: tc.sent}
		old := *stored.DeepCopy()
		resetMetaKeeping(&meta, &old, wire.AnnotationEncryptionKeys)
		if !maps.Equal(meta.Annotations, tc.want) || meta.Labels["l"] != "1" {
			t.Errorf("%s: annotations %v, labels %v; want %v and the stored labels", tc.name, meta.Annotations, meta.Labels, tc.want)
		}
		if old.Annotations[wire.AnnotationEncryptionKeys] != "old" {
			t.Errorf("%s: the stored object changed: %v", tc.name, old.Annotations)
		}
	}
	meta := metav1.ObjectMeta{Annotations: map[string]string{wire.AnnotationEncryptionKeys: "k"}}
	resetMetaKeeping(&meta, &metav1.ObjectMeta{})
	if meta.Annotations != nil {
		t.Errorf("keeping nothing: annotations %v, want the stored (none)", meta.Annotations)
	}
}
