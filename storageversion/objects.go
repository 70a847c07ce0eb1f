package storageversion

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ErrNotServed means that the storageversions resource is not in the registry.
var ErrNotServed = errors.New("internal.apiserver.k8s.io/v1alpha1 storageversions are not served by this server")

// crdGroupResource is the resource of CustomResourceDefinitions, the owners of custom
// resources' StorageVersions.
var crdGroupResource = schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"}

// objects reads and writes StorageVersion objects through the object store. Every
// write is preconditioned on the uid and resourceVersion of the object it was computed
// from, so that nothing written concurrently is ever lost.
type objects struct {
	reg   *registry.Registry
	store *store.Store
	now   func() time.Time
}

func (o *objects) resource() (*registry.Resource, error) {
	res := o.reg.Get(GroupResource)
	if res == nil {
		return nil, ErrNotServed
	}
	return res, nil
}

// get reads the object as stored now.
func (o *objects) get(ctx context.Context, name string) (*unstructured.Unstructured, *apiserverinternalv1alpha1.StorageVersion, error) {
	res, err := o.resource()
	if err != nil {
		return nil, nil, err
	}
	obj, err := o.store.Get(ctx, store.Ref{Resource: res, Version: version, Name: name}, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	sv, err := fromUnstructured(obj)
	if err != nil {
		return nil, nil, err
	}
	return obj, sv, nil
}

// ref names the object name.
func (o *objects) ref(res *registry.Resource, name string) store.Ref {
	return store.Ref{Resource: res, Version: version, Name: name}
}

// create creates an object without entries (a creation ignores the status), owned by
// owner if set, and returns it; nil, and no error, when someone else created it
// meanwhile.
func (o *objects) create(ctx context.Context, res *registry.Resource, name string, owner *registry.OwnerRef) (*unstructured.Unstructured, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{}}}
	obj.SetAPIVersion(apiserverinternalv1alpha1.SchemeGroupVersion.String())
	obj.SetKind("StorageVersion")
	obj.SetName(name)
	if owner != nil {
		obj.SetOwnerReferences([]metav1.OwnerReference{ownerReference(owner)})
	}
	// The creation outlives ctx's cancellation: cut by it, a creation etcd had
	// committed would be reported as failed, and the object would stay without the
	// entry and without putEntry's undoing.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), detachedWriteTimeout)
	defer cancel()
	out, err := o.store.Create(cctx, store.Ref{Resource: res, Version: version}, obj, store.WriteOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, nil
	}
	return out, err
}

// putEntry makes the stored entry of e.APIServerID in the named object equal to e,
// the object owned by owner if set, creating it if need be, and returns the revision
// at which the object holds the entry. The status is recomputed (common version,
// condition) from the object as stored: Store.Update re-reads it and computes again
// when a concurrent writer got there first, so nothing written concurrently is lost.
// conflicts counts those re-reads.
func (o *objects) putEntry(ctx context.Context, name string, e Entry, keys wire.EncryptionKeys, owner *registry.OwnerRef) (rev int64, conflicts int, err error) {
	res, err := o.resource()
	if err != nil {
		return 0, 0, err
	}
	var created *unstructured.Unstructured
	if owner != nil {
		if created, err = o.ensureOwner(ctx, res, name, owner); err != nil {
			return 0, 0, err
		}
	}
	rev, conflicts, err = o.updateEntry(ctx, res, name, e, keys)
	if apierrors.IsNotFound(err) {
		// Not there yet: create it, then write the entry. Gone again at once (the
		// collector removes objects without entries), it is the caller's to retry.
		if created, err = o.create(ctx, res, name, owner); err != nil {
			return 0, conflicts, err
		}
		var more int
		rev, more, err = o.updateEntry(ctx, res, name, e, keys)
		conflicts += more
	}
	if err != nil && created != nil {
		o.undoCreate(ctx, created)
	}
	return rev, conflicts, err
}

// undoCreate deletes an object putEntry created but could not write its entry into
// (its context ended in between, most often as the server stopped), unless someone
// wrote it since; otherwise it would stay, empty, until the collector's grace period
// ends. The deletion outlives ctx's cancellation, bounded by detachedWriteTimeout.
func (o *objects) undoCreate(ctx context.Context, created *unstructured.Unstructured) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), detachedWriteTimeout)
	defer cancel()
	if err := o.delete(dctx, created); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		klog.FromContext(ctx).V(2).Info("Cannot delete the StorageVersion created without its entry; the collector removes it", "storageVersion", created.GetName(), "err", err)
	}
}

// detachedWriteTimeout bounds the writes that outlive their caller's cancellation: a
// creation, and the deletion that undoes it.
const detachedWriteTimeout = 5 * time.Second

// updateEntry writes e, and the encryption keys beside it, into the named object as
// it is stored (see putEntry).
func (o *objects) updateEntry(ctx context.Context, res *registry.Resource, name string, e Entry, keys wire.EncryptionKeys) (rev int64, conflicts int, err error) {
	calls := 0
	out, _, err := o.store.Update(ctx, o.ref(res, name), func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		calls++
		sv, err := fromUnstructured(cur)
		if err != nil {
			return nil, err
		}
		reported := encryptionKeys(sv)
		if e0 := findEntry(&sv.Status, e.APIServerID); e0 != nil && sameEntry(e0, &e) && sameKeys(reported, e.APIServerID, keys) {
			return cur, nil // nothing to write: Update keeps the object as it is
		}
		wire.SetEncryptionKeys(sv, withKeys(reported, e.APIServerID, keys))
		wire.SetStorageVersionEntries(sv, withEntry(&sv.Status, e), o.now())
		return withStatus(cur, sv)
	}, store.UpdateOptions{WriteOptions: store.WriteOptions{Subresource: "status"}})
	conflicts = max(calls-1, 0)
	if err != nil {
		return 0, conflicts, err
	}
	return revision(out.GetResourceVersion()), conflicts, nil
}

// ensureOwner creates the named object owned by owner (and returns it), or makes owner
// the CustomResourceDefinition owning it, replacing any other definition and keeping
// every other owner.
func (o *objects) ensureOwner(ctx context.Context, res *registry.Resource, name string, owner *registry.OwnerRef) (*unstructured.Unstructured, error) {
	_, _, err := o.store.Update(ctx, o.ref(res, name), func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if hasOwner(cur, owner) {
			return cur, nil
		}
		var refs []metav1.OwnerReference
		for _, r := range cur.GetOwnerReferences() {
			if !isDefinitionRef(r) {
				refs = append(refs, r)
			}
		}
		cur.SetOwnerReferences(append(refs, ownerReference(owner)))
		return cur, nil
	}, store.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return o.create(ctx, res, name, owner)
	}
	return nil, err
}

// withStatus returns cur with sv's status and the encryption keys reported beside it.
func withStatus(cur *unstructured.Unstructured, sv *apiserverinternalv1alpha1.StorageVersion) (*unstructured.Unstructured, error) {
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&sv.Status)
	if err != nil {
		return nil, err
	}
	cur.Object["status"] = status
	annotations := cur.GetAnnotations()
	if v, ok := sv.Annotations[wire.AnnotationEncryptionKeys]; ok {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[wire.AnnotationEncryptionKeys] = v
	} else {
		delete(annotations, wire.AnnotationEncryptionKeys)
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	cur.SetAnnotations(annotations)
	return cur, nil
}

// delete deletes obj (as read), preconditioned on its uid and resourceVersion.
func (o *objects) delete(ctx context.Context, obj *unstructured.Unstructured) error {
	res, err := o.resource()
	if err != nil {
		return err
	}
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	_, _, err = o.store.Delete(ctx, o.ref(res, obj.GetName()), store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	return err
}

// removeEntries removes from the named object the entries drop selects, recomputing the
// common version and condition, and deletes the object when no entry is left (only if
// it is still as written: a server that registers meanwhile keeps it, and a conflict
// is returned for the caller to look again). drop is asked again for the object as it
// then is when a concurrent writer got there first. It returns how many entries it
// removed and whether it deleted the object.
func (o *objects) removeEntries(ctx context.Context, name string, drop func(id string) (bool, error)) (removed int, deleted bool, err error) {
	res, err := o.resource()
	if err != nil {
		return 0, false, err
	}
	if n, err := o.deleteIfAllDropped(ctx, name, drop); n != 0 || err != nil {
		return max(n, 0), n > 0, err
	}
	out, _, err := o.store.Update(ctx, o.ref(res, name), func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		sv, err := fromUnstructured(cur)
		if err != nil {
			return nil, err
		}
		var dropErr error
		kept := without(&sv.Status, func(id string) bool {
			d, err := drop(id)
			if err != nil {
				dropErr = err
			}
			return d && err == nil
		})
		if dropErr != nil {
			return nil, dropErr
		}
		removed = len(sv.Status.StorageVersions) - len(kept)
		if removed == 0 {
			return cur, nil
		}
		wire.SetStorageVersionEntries(sv, kept, o.now())
		return withStatus(cur, sv)
	}, store.UpdateOptions{WriteOptions: store.WriteOptions{Subresource: "status"}})
	if apierrors.IsNotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if removed == 0 {
		return 0, false, nil
	}
	if entries, _, _ := unstructured.NestedSlice(out.Object, "status", "storageVersions"); len(entries) > 0 {
		return removed, false, nil
	}
	if err := o.delete(ctx, out); err != nil && !apierrors.IsNotFound(err) {
		return removed, false, err
	}
	return removed, true, nil
}

// deleteIfAllDropped deletes the named object as read when drop selects every entry
// it has: one write, where removing the entries first would take two. It returns how
// many entries went with the object, or -1 when there is no object; 0 (and no error)
// leaves the removal to a checked update: some entry stays, or the object changed
// since it was read.
func (o *objects) deleteIfAllDropped(ctx context.Context, name string, drop func(id string) (bool, error)) (int, error) {
	cur, sv, err := o.get(ctx, name)
	if apierrors.IsNotFound(err) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	if len(sv.Status.StorageVersions) == 0 {
		return 0, nil // not this server's to delete: one that registers has yet to write
	}
	for _, e := range sv.Status.StorageVersions {
		if d, err := drop(e.APIServerID); err != nil || !d {
			return 0, err
		}
	}
	switch err := o.delete(ctx, cur); {
	case apierrors.IsConflict(err):
		return 0, nil
	case apierrors.IsNotFound(err):
		return -1, nil
	case err != nil:
		return 0, err
	}
	return len(sv.Status.StorageVersions), nil
}

// ownerGone reports whether obj is owned by a CustomResourceDefinition that no longer
// exists (none of that name, or one with another uid).
func (o *objects) ownerGone(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	for _, ref := range obj.GetOwnerReferences() {
		if !isDefinitionRef(ref) {
			continue
		}
		res := o.reg.Get(crdGroupResource)
		if res == nil {
			return false, nil
		}
		crd, err := o.store.Get(ctx, store.Ref{Resource: res, Version: "v1", Name: ref.Name}, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return crd.GetUID() != ref.UID, nil
	}
	return false, nil
}

// deleteIfOrphan deletes the named object if its CustomResourceDefinition is gone. It
// reports whether it did.
func (o *objects) deleteIfOrphan(ctx context.Context, name string) (bool, error) {
	obj, _, err := o.get(ctx, name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	gone, err := o.ownerGone(ctx, obj)
	if err != nil || !gone {
		return false, err
	}
	if err := o.delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	return true, nil
}

func ownerReference(o *registry.OwnerRef) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: types.UID(o.UID)}
}

func isDefinitionRef(r metav1.OwnerReference) bool {
	return r.Kind == "CustomResourceDefinition" && (r.APIVersion == apiextensionsv1.SchemeGroupVersion.String() || r.APIVersion == "apiextensions.k8s.io/v1beta1")
}

// hasOwner reports whether obj carries owner as an owner reference.
func hasOwner(obj *unstructured.Unstructured, owner *registry.OwnerRef) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.Kind == owner.Kind && r.Name == owner.Name && string(r.UID) == owner.UID && r.APIVersion == owner.APIVersion {
			return true
		}
	}
	return false
}

// revision parses a resourceVersion as the etcd revision it is (0 if it is not one).
// Revisions are compared as numbers, never as strings.
func revision(rv string) int64 {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func fmtEntry(e *Entry) string {
	return fmt.Sprintf("encoding %s, decodable %v, served %v", e.EncodingVersion, e.DecodableVersions, e.ServedVersions)
}
