package garbagecollector

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// monitored is what a monitor keeps of an object: the metadata the graph and the
// collector's patches read, and nothing else. A monitor holds one per object of its
// resource, and the collector follows every resource: at a million objects, this is
// most of what the collector keeps, so it is kept small (48 bytes and the ids' string:
// two allocations, three pointers for Go's collector to trace; the namespace shared
// between the objects of a namespace; what relates the object to others, which most
// objects do not have, allocated only for those that do).
type monitored struct {
	namespace string
	// ids holds the name, the uid and the resourceVersion, in one allocation: at
	// offsets 0, uidAt and rvAt.
	ids         string
	uidAt, rvAt int32
	rel         *relations // nil: no owners, no finalizers, no deletion
}

// relations are the fields of an object that may make it a node of the graph.
type relations struct {
	owners     []metav1.OwnerReference
	finalizers []string
	deletion   *metav1.Time
}

// relate sets one of the relations (through change) and drops them once all are empty.
func (m *monitored) relate(change func(r *relations)) {
	r := relations{}
	if m.rel != nil {
		r = *m.rel
	}
	change(&r)
	if len(r.owners) == 0 && len(r.finalizers) == 0 && r.deletion == nil {
		m.rel = nil
		return
	}
	m.rel = &r
}

func (m *monitored) owners() []metav1.OwnerReference {
	if m.rel == nil {
		return nil
	}
	return m.rel.owners
}

func (m *monitored) finalizers() []string {
	if m.rel == nil {
		return nil
	}
	return m.rel.finalizers
}

func (m *monitored) deletion() *metav1.Time {
	if m.rel == nil {
		return nil
	}
	return m.rel.deletion
}

var (
	_ runtime.Object = &monitored{}
	_ metav1.Object  = &monitored{}
)

// metadataOnly is a monitor's transform: an object as the monitor keeps it.
func metadataOnly(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	m := &monitored{namespace: unique.Make(u.GetNamespace()).Value()}
	m.relate(func(r *relations) {
		r.owners, r.finalizers, r.deletion = u.GetOwnerReferences(), u.GetFinalizers(), u.GetDeletionTimestamp()
	})
	m.pack(u.GetName(), u.GetUID(), u.GetResourceVersion())
	return m, nil
}

func (m *monitored) pack(name string, uid types.UID, rv string) {
	m.ids = name + string(uid) + rv
	m.uidAt, m.rvAt = int32(len(name)), int32(len(name)+len(uid))
}

// partial returns the object's metadata as the API's metadata reads give it.
func (m *monitored) partial() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: m.namespace, Name: m.GetName(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
		OwnerReferences: m.owners(), Finalizers: m.finalizers(), DeletionTimestamp: m.deletion(),
	}}
}

// GetObjectKind has no kind: the monitor that keeps it knows it.
func (m *monitored) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the object and what it refers to.
func (m *monitored) DeepCopyObject() runtime.Object {
	out := *m
	if m.rel == nil {
		return &out
	}
	rel := relations{owners: make([]metav1.OwnerReference, len(m.rel.owners)),
		finalizers: append([]string(nil), m.rel.finalizers...), deletion: m.rel.deletion.DeepCopy()}
	for i := range m.rel.owners {
		m.rel.owners[i].DeepCopyInto(&rel.owners[i])
	}
	out.rel = &rel
	return &out
}

// The accessors of metav1.Object: the fields kept are read and written, the others
// read as empty and are not kept.

func (m *monitored) GetNamespace() string               { return m.namespace }
func (m *monitored) SetNamespace(ns string)             { m.namespace = ns }
func (m *monitored) GetName() string                    { return m.ids[:m.uidAt] }
func (m *monitored) SetName(name string)                { m.pack(name, m.GetUID(), m.GetResourceVersion()) }
func (m *monitored) GetGenerateName() string            { return "" }
func (m *monitored) SetGenerateName(string)             {}
func (m *monitored) GetUID() types.UID                  { return types.UID(m.ids[m.uidAt:m.rvAt]) }
func (m *monitored) SetUID(uid types.UID)               { m.pack(m.GetName(), uid, m.GetResourceVersion()) }
func (m *monitored) GetResourceVersion() string         { return m.ids[m.rvAt:] }
func (m *monitored) SetResourceVersion(rv string)       { m.pack(m.GetName(), m.GetUID(), rv) }
func (m *monitored) GetGeneration() int64               { return 0 }
func (m *monitored) SetGeneration(int64)                {}
func (m *monitored) GetSelfLink() string                { return "" }
func (m *monitored) SetSelfLink(string)                 {}
func (m *monitored) GetCreationTimestamp() metav1.Time  { return metav1.Time{} }
func (m *monitored) SetCreationTimestamp(metav1.Time)   {}
func (m *monitored) GetDeletionTimestamp() *metav1.Time { return m.deletion() }
func (m *monitored) SetDeletionTimestamp(t *metav1.Time) {
	m.relate(func(r *relations) { r.deletion = t })
}
func (m *monitored) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (m *monitored) SetDeletionGracePeriodSeconds(*int64)  {}
func (m *monitored) GetLabels() map[string]string          { return nil }
func (m *monitored) SetLabels(map[string]string)           {}
func (m *monitored) GetAnnotations() map[string]string     { return nil }
func (m *monitored) SetAnnotations(map[string]string)      {}
func (m *monitored) GetFinalizers() []string               { return m.finalizers() }
func (m *monitored) SetFinalizers(f []string) {
	m.relate(func(r *relations) { r.finalizers = f })
}
func (m *monitored) GetOwnerReferences() []metav1.OwnerReference { return m.owners() }
func (m *monitored) SetOwnerReferences(o []metav1.OwnerReference) {
	m.relate(func(r *relations) { r.owners = o })
}
func (m *monitored) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *monitored) SetManagedFields([]metav1.ManagedFieldsEntry)  {}
