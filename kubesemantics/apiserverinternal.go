package kubesemantics

import (
	"context"
	"maps"

	"github.com/concordproject/concord/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/apiserverinternal"
	apiserverinternalvalidation "k8s.io/kubernetes/pkg/apis/apiserverinternal/validation"

	_ "k8s.io/kubernetes/pkg/apis/apiserverinternal/install" // internal.apiserver's types, defaults and conversions
)

func init() { groups = append(groups, apiserverInternalKinds) }

// apiserverInternalKinds are the strategies of group internal.apiserver.k8s.io. Who
// may write StorageVersions is Concord's own rule (package storageversion).
func apiserverInternalKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}: kind[*apiserverinternal.StorageVersion]{
			prepareCreate: func(_ context.Context, sv *apiserverinternal.StorageVersion) {
				sv.Status = apiserverinternal.StorageVersionStatus{}
			},
			validate: func(_ context.Context, sv *apiserverinternal.StorageVersion) field.ErrorList {
				return apiserverinternalvalidation.ValidateStorageVersion(sv)
			},
			prepareUpdate: func(_ context.Context, sv, old *apiserverinternal.StorageVersion) { sv.Status = old.Status },
			validateUpdate: func(_ context.Context, sv, old *apiserverinternal.StorageVersion) field.ErrorList {
				return apiserverinternalvalidation.ValidateStorageVersionUpdate(sv, old)
			},
			prepareStatus: func(_ context.Context, sv, old *apiserverinternal.StorageVersion) {
				sv.Spec = old.Spec
				resetMetaKeeping(&sv.ObjectMeta, &old.ObjectMeta, wire.AnnotationEncryptionKeys)
			},
			validateStatus: func(_ context.Context, sv, old *apiserverinternal.StorageVersion) field.ErrorList {
				return apiserverinternalvalidation.ValidateStorageVersionStatusUpdate(sv, old)
			},
		}.erase(),
	}
}

// resetMetaKeeping makes meta, of a status update, what the stored object's metadata
// is where a status update may not change it, as kube's status strategies do, but
// for the annotations named keep: Concord's servers report their encryption keys in
// one beside their StorageVersion entries, in the same status write.
func resetMetaKeeping(meta, old *metav1.ObjectMeta, keep ...string) {
	sent := meta.Annotations
	metav1.ResetObjectMetaForStatus(meta, old)
	annotations := maps.Clone(meta.Annotations)
	for _, k := range keep {
		v, ok := sent[k]
		switch {
		case ok && annotations == nil:
			annotations = map[string]string{k: v}
		case ok:
			annotations[k] = v
		default:
			delete(annotations, k)
		}
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	meta.Annotations = annotations
}
