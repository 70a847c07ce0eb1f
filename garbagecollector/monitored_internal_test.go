package garbagecollector

import (
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What a monitor keeps of an object that relates to none is 48 bytes and its ids; one
// that has owners, finalizers or a deletion keeps them, and drops them once they are
// all gone.
func TestMonitoredKeepsRelationsOnlyWhenThereAreAny(t *testing.T) {
	if size := unsafe.Sizeof(monitored{}); size != 48 {
		t.Errorf("a monitored object is %d bytes, want 48", size)
	}
	u := &unstructured.Unstructured{}
	u.SetNamespace("ns")
	u.SetName("plain")
	u.SetUID("u1")
	u.SetResourceVersion("7")
	obj, err := metadataOnly(u)
	if err != nil {
		t.Fatal(err)
	}
	m := obj.(*monitored)
	if m.rel != nil || m.GetName() != "plain" || m.GetUID() != "u1" || m.GetResourceVersion() != "7" || m.GetNamespace() != "ns" {
		t.Fatalf("kept %+v", m)
	}
	owners := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "u0"}}
	m.SetOwnerReferences(owners)
	m.SetFinalizers([]string{metav1.FinalizerOrphanDependents})
	c := m.DeepCopyObject().(*monitored)
	if p := c.partial(); len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != "u0" || len(p.Finalizers) != 1 {
		t.Fatalf("a copy's metadata: %+v", p.ObjectMeta)
	}
	m.SetOwnerReferences(nil)
	m.SetFinalizers(nil)
	if m.rel != nil {
		t.Errorf("relations kept once all are empty: %+v", m.rel)
	}
	if len(c.GetOwnerReferences()) != 1 {
		t.Error("changing the object changed its copy")
	}
}
