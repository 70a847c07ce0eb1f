package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Delete deletes ns/name of res and returns the object as it was last stored, in
// version, and whether it is gone. An object with finalizers (its own, or those its
// resource's hooks add when its deletion starts), or one its hooks hold back, is not
// removed: its deletionTimestamp is set (once) and it stays until the finalizers are
// removed by updates. Preconditions on uid and
// resourceVersion are a 409 Conflict when they fail; then admission (opts.Admit) may
// refuse the deletion.
//
// The garbage collector's finalizers follow the options, as in Kubernetes' registry:
// Orphan adds the orphan finalizer, Foreground the foregroundDeletion finalizer,
// Background neither (removing whichever the object has); without a policy the
// object's own choice stands, else the resource's default (registry.Resource's
// GarbageCollection). A deletion of an object already being deleted changes these
// finalizers the same way: one that leaves it none deletes it now.
//
// A resource that deletes gracefully (registry.Hooks.GracePeriod: Pods) keeps the
// object for its grace period (see graceful): the deletion is written, and the object
// stays until a deletion with a period of 0 (a client's, or one that shortens it to
// 0). A deletion whose period is 0 from the start writes the object as deleted too,
// then deletes it, as Kubernetes does: its watchers see both. A deletion of an object
// whose graceful deletion is pending, and that does not shorten it, changes nothing
// (its finalizers neither).
func (s *Store) Delete(ctx context.Context, ref Ref, opts DeleteOptions) (*registry.Object, bool, error) {
	res, version, name := ref.Resource, ref.Version, ref.Name
	key := ref.key()
	kv, err := s.storage.Get(ctx, key)
	// A compare-and-swap loop, as Kubernetes' GuaranteedUpdate: a write that lost the
	// race to another is decided again (preconditions, admission, finalizers) on the
	// value etcd returned with the conflict, and written conditional on it. It is the
	// store's optimistic concurrency, not a retry of a failed call (package retry's
	// job): it ends when a write lands, a check refuses, or etcd fails.
	for {
		if err != nil {
			return nil, false, s.storageError(res, name, err)
		}
		current, err := s.decodeAs(ctx, res, kv, version)
		if err != nil {
			return nil, false, err
		}
		opts.Preconditions = s.caughtUp(ctx, res, kv, opts.Preconditions)
		if err := admitDeletion(ctx, res, current, opts); err != nil {
			return nil, false, err
		}
		starts := current.GetDeletionTimestamp() == nil
		g, period := s.graceful(res, current, opts.GracePeriodSeconds)
		if g == gracePending {
			return current, false, nil // being deleted, no later than asked
		}
		keep, changed := deletionKept(res, version, current, starts, opts.Propagation)
		write := g == graceMarked
		if keep && !write {
			if current.GetDeletionTimestamp() != nil && !changed {
				return current, false, nil // already terminating, as asked
			}
			s.markDeleting(ctx, res, current)
			write = true
		}
		if !write {
			if opts.DryRun {
				return current, true, nil
			}
			_, err = s.storage.Delete(ctx, key, kv.Revision)
			if err == nil {
				s.deleted(ctx, res, key, current)
				return current, true, nil
			}
		} else {
			gone := !keep && period == 0 // a graceful deletion of period 0 deletes now
			if opts.DryRun {
				return current, gone, nil
			}
			var written bool
			written, err = s.writeDeletion(ctx, res, key, kv, current, gone)
			if err == nil {
				return current, written, nil
			}
			if rv := current.GetResourceVersion(); rv != strconv.FormatInt(kv.Revision, 10) {
				// The deletion was written, someone wrote after it: a resourceVersion
				// precondition that held holds of what this deletion wrote, as in
				// Kubernetes' registry.
				opts.Preconditions = movedPreconditions(opts.Preconditions, rv)
			}
		}
		var ce *storage.ConflictError
		if !errors.As(err, &ce) {
			return nil, false, s.storageError(res, name, err)
		}
		if ce.Current == nil {
			return nil, false, s.storageError(res, name, storage.ErrNotFound)
		}
		kv = ce.Current
	}
}

// admitDeletion checks a deletion of current: opts' preconditions, the resource's
// hook (for a deletion that starts) and admission.
func admitDeletion(ctx context.Context, res *registry.Resource, current *registry.Object, opts DeleteOptions) error {
	if err := DeletePreconditions(res.Names.Kind, current, opts.Preconditions); err != nil {
		return err
	}
	if res.Hooks != nil && res.Hooks.AdmitDelete != nil && current.GetDeletionTimestamp() == nil {
		if err := res.Hooks.AdmitDelete(ctx, current); err != nil {
			return err
		}
	}
	if opts.Admit != nil {
		return opts.Admit(ctx, nil, current)
	}
	return nil
}

// DeletePreconditions is the 409 Conflict of a deletion of obj, of kind, whose
// preconditions p do not hold, worded as Kubernetes' registry words it (naming the
// kind), or nil.
func DeletePreconditions(kind string, obj metav1.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	gr := schema.GroupResource{Resource: kind}
	if p.UID != nil && *p.UID != obj.GetUID() {
		return apierrors.NewConflict(gr, obj.GetName(), fmt.Errorf(
			"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, obj.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != obj.GetResourceVersion() {
		return apierrors.NewConflict(gr, obj.GetName(), fmt.Errorf(
			"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, obj.GetResourceVersion()))
	}
	return nil
}

// movedPreconditions are p with its resourceVersion, if it has one, moved to rv.
func movedPreconditions(p *metav1.Preconditions, rv string) *metav1.Preconditions {
	if p == nil || p.ResourceVersion == nil {
		return p
	}
	moved := *p
	moved.ResourceVersion = &rv
	return &moved
}

// deletionKept sets the finalizers obj carries while it is deleted (those its
// resource's deletion adds where it starts, those of the garbage collector as policy
// asks) and reports whether they, or its resource's hook, keep it in storage, and
// whether its finalizers changed.
func deletionKept(res *registry.Resource, version string, obj *registry.Object, starts bool, policy *metav1.DeletionPropagation) (keep, changed bool) {
	if starts && res.Hooks != nil {
		for _, f := range res.Hooks.DeletionFinalizers {
			if !slices.Contains(obj.GetFinalizers(), f) {
				obj.SetFinalizers(append(obj.GetFinalizers(), f))
			}
		}
	}
	finalizers, changed := deletionFinalizers(res, version, obj, policy)
	obj.SetFinalizers(finalizers)
	return len(finalizers) > 0 || pendingByHook(res, obj), changed
}

// writeDeletion writes obj, whose deletion started, over kv; with gone, it then
// deletes it at the revision written, and reports that it did. If someone deleted it
// in between, it is gone all the same. A conflict is returned as the storage's: the
// caller decides again.
func (s *Store) writeDeletion(ctx context.Context, res *registry.Resource, key string, kv *storage.KeyValue, obj *registry.Object, gone bool) (bool, error) {
	data, err := res.Encode(ctx, obj)
	if err != nil {
		return false, s.conversionError(res, err)
	}
	rev, err := s.storage.Update(ctx, key, data, kv.Revision, storage.WithTTL(res.TTL))
	if err != nil {
		return false, err
	}
	s.recent.Forget(key)
	s.namespaces.Wrote(key)
	obj.SetResourceVersion(strconv.FormatInt(rev, 10))
	if !gone {
		return false, nil
	}
	_, err = s.storage.Delete(ctx, key, rev)
	var ce *storage.ConflictError
	if err != nil && (!errors.As(err, &ce) || ce.Current != nil) {
		return false, err
	}
	s.deleted(ctx, res, key, obj)
	return true, nil
}

// deleted is what follows the deletion of obj from key.
func (s *Store) deleted(ctx context.Context, res *registry.Resource, key string, obj *registry.Object) {
	s.recent.Forget(key)
	s.namespaces.Wrote(key)
	release(ctx, res, obj)
}

// markDeleting starts the deletion of obj, once: its deletionTimestamp is now, its
// grace period zero and its generation one more (Kubernetes' markAsDeleting), and its
// resource's hook may prepare it. The timestamp alone where Kubernetes deletes the
// resource its own way: resources whose deletion their hooks hold (namespaces) or
// adds finalizers (CustomResourceDefinitions).
func (s *Store) markDeleting(ctx context.Context, res *registry.Resource, obj *registry.Object) {
	if obj.GetDeletionTimestamp() != nil {
		return
	}
	now := s.nowTime()
	obj.SetDeletionTimestamp(&now)
	if h := res.Hooks; h == nil || (len(h.DeletionFinalizers) == 0 && h.PendingDeletion == nil) {
		var zero int64
		obj.SetDeletionGracePeriodSeconds(&zero)
		if g := obj.GetGeneration(); g > 0 {
			obj.SetGeneration(g + 1)
		}
	}
	if res.Hooks != nil && res.Hooks.PrepareForDelete != nil {
		res.Hooks.PrepareForDelete(ctx, obj)
	}
}

// deletionFinalizers returns the finalizers obj must carry while it is deleted with
// policy (nil: none asked), and whether they differ from those it has: the orphan
// and foregroundDeletion finalizers of the garbage collector as Kubernetes'
// deletionFinalizersForGarbageCollection decides them, the others as they are.
func deletionFinalizers(res *registry.Resource, version string, obj *registry.Object, policy *metav1.DeletionPropagation) ([]string, bool) {
	have := obj.GetFinalizers()
	orphan, foreground := false, false
	switch {
	case res.GarbageCollection.Unsupported:
	case policy != nil:
		orphan, foreground = *policy == metav1.DeletePropagationOrphan, *policy == metav1.DeletePropagationForeground
	default:
		// The object's own choice, the first of the two it names, else the default.
		i := slices.IndexFunc(have, func(f string) bool {
			return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
		})
		if i >= 0 {
			orphan, foreground = have[i] == metav1.FinalizerOrphanDependents, have[i] == metav1.FinalizerDeleteDependents
		} else {
			orphan = slices.Contains(res.GarbageCollection.OrphanByDefault, version)
		}
	}
	want := slices.DeleteFunc(slices.Clone(have), func(f string) bool {
		return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
	})
	if orphan {
		want = append(want, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		want = append(want, metav1.FinalizerDeleteDependents)
	}
	if sameSet(have, want) {
		return have, false
	}
	return want, true
}

// sameSet reports whether a and b hold the same strings, in any order and number.
func sameSet(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			return false
		}
	}
	return true
}
