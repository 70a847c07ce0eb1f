package store

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
func (s *Store) Delete(ctx context.Context, ref Ref, opts DeleteOptions) (*registry.Object, bool, error) {
	res, version, name, pre := ref.Resource, ref.Version, ref.Name, opts.Preconditions
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
		if err := checkPreconditions(res, name, current, pre); err != nil {
			return nil, false, err
		}
		if res.Hooks != nil && res.Hooks.AdmitDelete != nil && current.GetDeletionTimestamp() == nil {
			if err := res.Hooks.AdmitDelete(ctx, current); err != nil {
				return nil, false, err
			}
		}
		if opts.Admit != nil {
			if err := opts.Admit(ctx, nil, current); err != nil {
				return nil, false, err
			}
		}
		var rev int64
		var werr error
		deleted := false
		if current.GetDeletionTimestamp() == nil && res.Hooks != nil {
			for _, f := range res.Hooks.DeletionFinalizers {
				if !slices.Contains(current.GetFinalizers(), f) {
					current.SetFinalizers(append(current.GetFinalizers(), f))
				}
			}
		}
		finalizers, changed := deletionFinalizers(res, version, current, opts.Propagation)
		current.SetFinalizers(finalizers)
		if len(finalizers) > 0 || pendingByHook(res, current) {
			if current.GetDeletionTimestamp() != nil && !changed {
				return current, false, nil // already terminating, as asked
			}
			s.markDeleting(ctx, res, current)
			if opts.DryRun {
				return current, false, nil
			}
			data, eerr := res.Encode(ctx, current)
			if eerr != nil {
				return nil, false, s.conversionError(res, eerr)
			}
			rev, werr = s.storage.Update(ctx, key, data, kv.Revision, storage.WithTTL(res.TTL))
		} else {
			if opts.DryRun {
				return current, true, nil
			}
			deleted = true
			rev, werr = s.storage.Delete(ctx, key, kv.Revision)
		}
		if werr == nil {
			s.recent.Forget(key)
			s.namespaces.Wrote(key)
			if deleted {
				release(ctx, res, current)
			}
			if !deleted {
				current.SetResourceVersion(strconv.FormatInt(rev, 10))
			}
			return current, deleted, nil
		}
		var ce *storage.ConflictError
		if !errors.As(werr, &ce) {
			return nil, false, s.storageError(res, name, werr)
		}
		if ce.Current == nil {
			return nil, false, s.storageError(res, name, storage.ErrNotFound)
		}
		kv = ce.Current
	}
}

// markDeleting starts the deletion of obj, once: its deletionTimestamp is now, its
// grace period zero and its generation one more (Kubernetes' markAsDeleting; not the
// generation of resources whose deletion their hooks hold, namespaces, which
// Kubernetes deletes its own way; neither for resources whose deletion adds
// finalizers, CustomResourceDefinitions), and its resource's hook may prepare it.
func (s *Store) markDeleting(ctx context.Context, res *registry.Resource, obj *registry.Object) {
	if obj.GetDeletionTimestamp() != nil {
		return
	}
	now := s.nowTime()
	obj.SetDeletionTimestamp(&now)
	// A resource whose deletion adds finalizers of its own is written as its kube
	// storage writes it: the timestamp alone (Hooks.DeletionFinalizers).
	if h := res.Hooks; h == nil || len(h.DeletionFinalizers) == 0 {
		var zero int64
		obj.SetDeletionGracePeriodSeconds(&zero)
		if g := obj.GetGeneration(); g > 0 && (h == nil || h.PendingDeletion == nil) {
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
