package storageversion

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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

// create creates an object without entries (a creation ignores the status), owned by
// owner if set.
func (o *objects) create(ctx context.Context, name string, owner *registry.OwnerRef) (*unstructured.Unstructured, error) {
	res, err := o.resource()
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{}}}
	obj.SetAPIVersion(apiserverinternalv1alpha1.SchemeGroupVersion.String())
	obj.SetKind("StorageVersion")
	obj.SetName(name)
	if owner != nil {
		obj.SetOwnerReferences([]metav1.OwnerReference{ownerReference(owner)})
	}
	return o.store.Create(ctx, store.Ref{Resource: res, Version: version}, obj, store.WriteOptions{})
}

// setOwner makes owner the CustomResourceDefinition owning obj, replacing any other
// definition, and keeps every other owner.
func (o *objects) setOwner(ctx context.Context, obj *unstructured.Unstructured, owner *registry.OwnerRef) (*unstructured.Unstructured, error) {
	res, err := o.resource()
	if err != nil {
		return nil, err
	}
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	out, _, err := o.store.Update(ctx, store.Ref{Resource: res, Version: version, Name: obj.GetName()}, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		var refs []metav1.OwnerReference
		for _, r := range cur.GetOwnerReferences() {
			if !isDefinitionRef(r) {
				refs = append(refs, r)
			}
		}
		cur.SetOwnerReferences(append(refs, ownerReference(owner)))
		return cur, nil
	}, store.UpdateOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	return out, err
}

// writeStatus replaces the status of obj (as read) with st.
func (o *objects) writeStatus(ctx context.Context, obj *unstructured.Unstructured, st *apiserverinternalv1alpha1.StorageVersionStatus) (*unstructured.Unstructured, error) {
	res, err := o.resource()
	if err != nil {
		return nil, err
	}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return nil, err
	}
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	out, _, err := o.store.Update(ctx, store.Ref{Resource: res, Version: version, Name: obj.GetName()}, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.Object["status"] = status
		return cur, nil
	}, store.UpdateOptions{
		WriteOptions:  store.WriteOptions{Subresource: "status"},
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
	})
	return out, err
}

// delete deletes obj (as read).
func (o *objects) delete(ctx context.Context, obj *unstructured.Unstructured) error {
	res, err := o.resource()
	if err != nil {
		return err
	}
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	_, _, err = o.store.Delete(ctx, store.Ref{Resource: res, Version: version, Name: obj.GetName()}, store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	return err
}

// removeEntries removes from the named object the entries drop selects, recomputing the
// common version and condition, and deletes the object when no entry is left. It
// retries conflicts (re-reading, and asking drop again) up to maxAttempts times. It
// returns how many entries it removed and whether it deleted the object.
func (o *objects) removeEntries(ctx context.Context, name string, drop func(id string) (bool, error), onRetry func(conflict bool)) (removed int, deleted bool, err error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return 0, false, err
			}
		}
		obj, sv, err := o.get(ctx, name)
		if apierrors.IsNotFound(err) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		var dropErr error
		kept := without(&sv.Status, func(id string) bool {
			d, err := drop(id)
			if err != nil {
				dropErr = err
				return false
			}
			return d
		})
		if dropErr != nil {
			return 0, false, dropErr
		}
		n := len(sv.Status.StorageVersions) - len(kept)
		if n == 0 {
			return 0, false, nil
		}
		if len(kept) == 0 {
			err = o.delete(ctx, obj)
		} else {
			SetEntries(sv, kept, o.now())
			_, err = o.writeStatus(ctx, obj, &sv.Status)
		}
		switch {
		case err == nil:
			return n, len(kept) == 0, nil
		case retryable(err) && attempt < maxAttempts:
			if onRetry != nil {
				onRetry(apierrors.IsConflict(err))
			}
			continue
		}
		return 0, false, err
	}
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

// maxAttempts bounds the attempts of one write that keeps meeting conflicts; the
// caller's queue retries later, forever.
const maxAttempts = 8

// retryable reports whether a write may succeed if tried again at once: a concurrent
// change (conflict, the object created or deleted meanwhile) or a passing timeout.
func retryable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}

// backoff is the jittered pause before attempt n (n ≥ 1): 10 ms doubling to 640 ms.
func backoff(n int) time.Duration {
	d := 10 * time.Millisecond << min(n-1, 6)
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
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
