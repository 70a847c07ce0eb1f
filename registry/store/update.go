package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// UpdateFunc computes the new state of an object from its current state (in the
// requested version; a private copy the function may change and return). current is
// nil when the object does not exist and the update may create it. An error aborts the
// update and is returned as is.
type UpdateFunc func(ctx context.Context, current *registry.Object) (*registry.Object, error)

// UpdateOptions tune Update.
type UpdateOptions struct {
	WriteOptions
	// AllowCreate lets Update create a missing object (server-side apply, and PUT for
	// resources that allow it); fn then receives nil.
	AllowCreate bool
	// Preconditions must hold on the current object or the update is a 409 Conflict.
	Preconditions *metav1.Preconditions
}

// Update applies fn to the current object ns/name of res until it is written without
// a conflict, and returns the stored result in version and whether it was created.
//
// If the object fn returns carries a resourceVersion, it must equal the current one
// (optimistic concurrency: 409 Conflict otherwise). Immutable metadata is kept from the
// current object; generation is bumped when anything outside metadata (and status, if
// the version has a status subresource) changes; with Subresource "status" only the
// status is taken from fn's result. If the encoded result equals what is stored,
// nothing is written and the resourceVersion stays. A terminating object whose last
// finalizer is removed is deleted.
func (s *Store) Update(ctx context.Context, ref Ref, fn UpdateFunc, opts UpdateOptions) (*registry.Object, bool, error) {
	res, name := ref.Resource, ref.Name
	key := ref.key()
	// Start from the state this server last saw, if any: see recentObjects.
	kv, err := s.recent.Get(key), error(nil)
	remembered := kv != nil
	if !remembered {
		kv, err = s.getFresh(ctx, key)
	}
	for attempt := 0; ; attempt++ {
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return nil, false, s.storageError(res, name, err)
		}
		if err != nil { // not found
			if !opts.AllowCreate {
				return nil, false, apierrors.NewNotFound(res.GroupResource(), name)
			}
			obj, cerr := fn(ctx, nil)
			if cerr != nil {
				return nil, false, cerr
			}
			if obj.GetName() != name {
				return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), name))
			}
			obj.SetResourceVersion("")
			created, cerr := s.Create(ctx, ref, obj, opts.WriteOptions)
			if apierrors.IsAlreadyExists(cerr) && attempt < 5 {
				kv, err = s.getFresh(ctx, key)
				continue
			}
			return created, cerr == nil, cerr
		}
		obj, written, done, uerr := s.tryUpdate(ctx, ref, kv, fn, opts)
		if remembered && !written {
			// Only a write conditional on the remembered revision proves it was
			// current; anything else is decided again on a fresh read.
			remembered = false
			kv, err = s.getFresh(ctx, key)
			continue
		}
		if uerr == nil || done {
			return obj, false, uerr
		}
		var ce *storage.ConflictError
		if !errors.As(uerr, &ce) {
			return nil, false, s.storageError(res, name, uerr)
		}
		if ce.Current == nil {
			kv, err = nil, storage.ErrNotFound
		} else {
			kv, err = ce.Current, nil
		}
	}
}

// tryUpdate makes one attempt against the stored kv. written reports that a write
// conditional on kv.Revision succeeded (so kv was current); done reports that err (or
// the result) is final; otherwise err is a storage conflict worth retrying.
func (s *Store) tryUpdate(ctx context.Context, ref Ref, kv *storage.KeyValue, fn UpdateFunc, opts UpdateOptions) (_ *registry.Object, written, done bool, _ error) {
	res, version, ns, name := ref.Resource, ref.Version, ref.Namespace, ref.Name
	current, err := s.decodeAs(ctx, res, kv, version)
	if err != nil {
		return nil, false, true, err
	}
	if err := checkPreconditions(res, name, current, s.caughtUp(ctx, res, kv, opts.Preconditions)); err != nil {
		return nil, false, true, err
	}
	obj, err := fn(ctx, current.DeepCopy())
	if err != nil {
		return nil, false, true, err
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != current.GetResourceVersion() && s.onlyRewrittenSince(ctx, res, kv, rv) {
		obj.SetResourceVersion(current.GetResourceVersion()) // behind by re-encodings only
	}
	if err := s.prepareUpdate(ctx, ref, obj, current, opts); err != nil {
		return nil, false, true, err
	}
	// As Kubernetes' registry does, the allocation comes before validation, which
	// sees what was allocated.
	var alloc registry.Allocation
	if opts.Subresource == "" { // a subresource's write keeps what is allocated: nothing to allocate
		if alloc, err = allocate(ctx, res, obj, current, opts.DryRun); err != nil {
			return nil, false, true, err
		}
	}
	defer func() { alloc.Finish(context.WithoutCancel(ctx), written) }()
	if err := res.ValidateUpdate(ctx, version, opts.Subresource, obj, current); err != nil {
		return nil, false, true, err
	}
	if opts.Admit != nil {
		if err := opts.Admit(ctx, obj, current); err != nil {
			return nil, false, true, err
		}
	}
	key := res.Key(ns, name)
	if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 && !pendingByHook(res, obj) && graceOver(current) {
		// The last finalizer is gone: the deletion completes now (one in its grace
		// period waits for a deletion with 0).
		if opts.DryRun {
			return obj, false, true, nil
		}
		rev, err := s.storage.Delete(ctx, key, kv.Revision)
		if err != nil {
			return nil, false, false, err
		}
		s.recent.Forget(key)
		// Gone: what this update allocated goes back with what was stored.
		alloc.Finish(context.WithoutCancel(ctx), false)
		alloc = registry.Allocation{}
		release(ctx, res, current)
		obj.SetResourceVersion(strconv.FormatInt(rev, 10))
		return obj, true, true, nil
	}
	data, err := res.Encode(ctx, obj)
	if err != nil {
		return nil, false, true, s.conversionError(res, err)
	}
	if bytes.Equal(data, kv.Value) && !kv.Stale {
		// Nothing changed: Kubernetes writes nothing and keeps the resourceVersion. (A
		// value sealed with an older encryption key is written again, sealed anew.)
		// What is stored is what was allocated for.
		alloc.Finish(context.WithoutCancel(ctx), true)
		alloc = registry.Allocation{}
		return current, false, true, nil
	}
	if opts.DryRun {
		return obj, false, true, nil
	}
	rev, data, err := s.write(ctx, res, obj, data, opts.WriteOptions, func(data []byte) (int64, error) {
		return s.storage.Update(ctx, key, data, kv.Revision, storage.WithTTL(res.TTL))
	})
	if errors.Is(err, storage.ErrTooLarge) {
		return nil, false, true, s.storageError(res, name, err)
	}
	if err != nil {
		return nil, false, false, err
	}
	s.recent.Wrote(key, data, rev)
	obj.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, true, true, nil
}

// prepareUpdate makes obj, fn's answer to current, the object an update writes: its
// resourceVersion checked (or taken from current where unconditional updates are
// allowed), its name and namespace those of ref, admission's mutations applied, what
// it may not change carried over from current, prepared (tryUpdate validates it once
// what it needs is allocated).
func (s *Store) prepareUpdate(ctx context.Context, ref Ref, obj, current *registry.Object, opts UpdateOptions) error {
	res, version, ns, name := ref.Resource, ref.Version, ref.Namespace, ref.Name
	if obj.GetResourceVersion() == "" && !res.UnconditionalUpdate {
		// Kubernetes' registry refuses it so before anything else, its resourceVersion
		// read as the number 0.
		// It names the resource where a kind would stand, as Kubernetes' registry does.
		return apierrors.NewInvalid(schema.GroupKind{Group: res.Group, Kind: res.Names.Plural}, name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
	}
	if rv := obj.GetResourceVersion(); rv == "" && res.UnconditionalUpdate {
		obj.SetResourceVersion(current.GetResourceVersion())
	} else if rv != "" && rv != current.GetResourceVersion() {
		return apierrors.NewConflict(res.GroupResource(), name, errModified)
	}
	if err := checkName(res, obj, ns, name); err != nil {
		return err
	}
	if opts.Mutate != nil {
		if err := opts.Mutate(ctx, obj, current); err != nil {
			return err
		}
		if obj.GetName() != name || (res.Namespaced && obj.GetNamespace() != ns && obj.GetNamespace() != "") {
			return apierrors.NewBadRequest(fmt.Sprintf("admission changed the name or namespace of the object (%s/%s) from the URL's (%s/%s)", obj.GetNamespace(), obj.GetName(), ns, name))
		}
	}
	s.carryOver(res, version, obj, current, opts.Subresource)
	if res.Hooks != nil && res.Hooks.PrepareForUpdate != nil {
		res.Hooks.PrepareForUpdate(ctx, obj, current)
	}
	// The generation follows the spec as the hooks prepared it (defaulted, as
	// Kubernetes' strategies compare it); the resource's Semantics compute their own.
	if res.Semantics == nil && (res.Hooks == nil || !res.Hooks.NoGeneration) && specChanged(obj, current, hasStatusSubresource(res, version)) {
		obj.SetGeneration(current.GetGeneration() + 1)
	}
	return nil
}

// hasStatusSubresource reports whether version of res has a status subresource.
func hasStatusSubresource(res *registry.Resource, version string) bool {
	v := res.Version(version)
	return v != nil && v.Subresources != nil && v.Subresources.Status != nil
}

// getFresh reads key from etcd and remembers what it read.
func (s *Store) getFresh(ctx context.Context, key string) (*storage.KeyValue, error) {
	kv, err := s.storage.Get(ctx, key)
	if err == nil {
		s.recent.Saw(kv)
	}
	return kv, err
}

// carryOver keeps what an update may not change: system metadata from current, the
// generation among them (prepare bumps it), the status (main resource with a status
// subresource) or everything but the status (status subresource), nothing more for a
// subresource the Semantics write (they keep what it may not change).
func (s *Store) carryOver(res *registry.Resource, version string, obj, current *registry.Object, subresource string) {
	hasStatus := hasStatusSubresource(res, version)
	switch {
	case subresource == "status":
		status, hadStatus := obj.Object["status"]
		managed := obj.GetManagedFields()
		fresh := current.DeepCopy()
		if hadStatus {
			fresh.Object["status"] = status
		} else {
			delete(fresh.Object, "status")
		}
		fresh.SetManagedFields(managed)
		fresh.SetResourceVersion(obj.GetResourceVersion())
		copyAnnotations(fresh, obj, res.StatusAnnotations)
		*obj = *fresh
	case hasStatus && !res.SemanticSubresource(subresource):
		if status, ok := current.Object["status"]; ok {
			obj.Object["status"] = status
		} else {
			delete(obj.Object, "status")
		}
		copyAnnotations(obj, current, res.StatusAnnotations)
	}
	obj.SetAPIVersion(current.GetAPIVersion())
	obj.SetKind(current.GetKind())
	obj.SetUID(current.GetUID())
	obj.SetCreationTimestamp(current.GetCreationTimestamp())
	obj.SetDeletionTimestamp(current.GetDeletionTimestamp())
	obj.SetDeletionGracePeriodSeconds(current.GetDeletionGracePeriodSeconds())
	obj.SetNamespace(current.GetNamespace())
	obj.SetSelfLink("")
	obj.SetGeneration(current.GetGeneration())
}

// copyAnnotations makes the annotations keys of dst what they are in src (absent
// where src has none).
func copyAnnotations(dst, src *registry.Object, keys []string) {
	if len(keys) == 0 {
		return
	}
	from, to := src.GetAnnotations(), dst.GetAnnotations()
	for _, k := range keys {
		if v, ok := from[k]; ok {
			if to == nil {
				to = map[string]string{}
			}
			to[k] = v
		} else {
			delete(to, k)
		}
	}
	if len(to) == 0 {
		to = nil
	}
	dst.SetAnnotations(to)
}

// specChanged reports whether anything but metadata (and status, when it is a
// subresource) differs.
func specChanged(obj, current *registry.Object, statusIsSubresource bool) bool {
	skip := func(k string) bool { return k == "metadata" || (statusIsSubresource && k == "status") }
	for k, v := range obj.Object {
		if skip(k) {
			continue
		}
		if !reflect.DeepEqual(v, current.Object[k]) {
			return true
		}
	}
	for k := range current.Object {
		if _, ok := obj.Object[k]; !ok && !skip(k) {
			return true
		}
	}
	return false
}

func pendingByHook(res *registry.Resource, obj *registry.Object) bool {
	return res.Hooks != nil && res.Hooks.PendingDeletion != nil && res.Hooks.PendingDeletion(obj)
}

// graceOver reports whether the deletion of obj has no grace period left to wait
// for: none was set, or 0 (Kubernetes' ShouldDeleteDuringUpdate).
func graceOver(obj *registry.Object) bool {
	g := obj.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// errModified is the conflict of an update of an object at a resourceVersion it is no
// longer at, in Kubernetes' words.
var errModified = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// checkName refuses an object whose name or namespace is not the URL's (ns/name), as
// Kubernetes' handlers word it.
func checkName(res *registry.Resource, obj *registry.Object, ns, name string) error {
	if obj.GetName() != name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), name))
	}
	if res.Namespaced && obj.GetNamespace() != ns && obj.GetNamespace() != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", obj.GetNamespace(), ns))
	}
	return nil
}

// checkPreconditions enforces uid and resourceVersion preconditions.
func checkPreconditions(res *registry.Resource, name string, current *registry.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != current.GetUID() {
		return apierrors.NewConflict(res.GroupResource(), name,
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, current.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != current.GetResourceVersion() {
		return apierrors.NewConflict(res.GroupResource(), name,
			fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, current.GetResourceVersion()))
	}
	return nil
}
