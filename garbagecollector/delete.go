package garbagecollector

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/concordproject/concord/reconcile"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// errNotObserved retries a virtual node until a monitor observes its object: an owner
// the API has but no monitor has reported yet.
var errNotObserved = errors.New("the object exists but no monitor has observed it yet")

// attemptToDelete looks at the object of uid, as Kubernetes' garbage collector's
// attemptToDeleteItem does, and deletes it when none of its owners exists any more,
// reading the object and each owner from the API first.
func (t *term) attemptToDelete(ctx context.Context, uid types.UID) (reconcile.Result, error) {
	n, ok := t.graph.state(uid)
	if !ok {
		return reconcile.Result{}, nil
	}
	err := t.collect(ctx, n)
	if errors.Is(err, errClusterScopedDependent) {
		// Retrying cannot resolve it: Kubernetes leaves such an object alone.
		klog.FromContext(ctx).V(2).Info("Object is cluster-scoped but refers to a namespaced owner; the reference cannot be resolved", "object", n.ref)
		return reconcile.Result{}, nil
	}
	if errors.Is(err, errUnknownKind) {
		// Retried with backoff, and at once when the registry changes.
		t.waitForKinds(uid)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if s, ok := t.graph.state(uid); ok && s.virtual {
		return reconcile.Result{}, errNotObserved
	}
	return reconcile.Result{}, nil
}

// collect decides n's fate from what the API reads now: gone (the graph forgets it),
// waiting for its dependents (deleteDependentsFirst), kept with a live owner (its
// references to absent or foreground-deleted owners removed), deleted in the
// foreground (an owner waits for it and it has dependents of its own), or deleted
// (no owner left) with the policy its finalizers ask.
func (t *term) collect(ctx context.Context, n nodeState) error {
	logger := klog.FromContext(ctx)
	if n.deleting && !n.deletingDependents {
		return nil // on its way; its dependents are looked at once it is gone
	}
	latest, err := t.objects.get(ctx, n.ref)
	if apierrors.IsNotFound(err) || (err == nil && latest.UID != n.ref.UID) {
		t.graph.verifiedAbsent(n.ref)
		return nil
	}
	if err != nil {
		return err
	}
	if n.deletingDependents {
		return t.deleteDependentsFirst(ctx, n)
	}
	if len(latest.OwnerReferences) == 0 {
		return nil
	}
	solid, dangling, waiting, orphaned, err := t.classify(ctx, n.ref, latest)
	if err != nil {
		return err
	}
	if len(orphaned) > 0 {
		// Owners deleted with the orphan finalizer after this object's references
		// were made, gone before the graph knew it as their dependent. The write may
		// have started from a fresher read than the one classified: whatever other
		// owners remain are judged again, on what the API reads then.
		logger.V(2).Info("Removing the object's references to owners deleted with the orphan policy", "object", n.ref, "owners", uids(orphaned))
		if latest, err = t.objects.updateOwners(ctx, n.ref, latest, withoutOwners(uids(orphaned)...)); err != nil || latest == nil {
			return err
		}
		if len(latest.OwnerReferences) > 0 {
			t.deleter.Add(n.ref.UID)
		}
		return nil
	}
	switch {
	case len(solid) > 0:
		if len(dangling)+len(waiting) == 0 {
			return nil
		}
		logger.V(2).Info("Object has a live owner; removing its references to absent and foreground-deleted owners",
			"object", n.ref, "absent", uids(dangling), "waiting", uids(waiting))
		_, err := t.objects.updateOwners(ctx, n.ref, latest, withoutOwners(append(uids(dangling), uids(waiting)...)...))
		return err
	case len(waiting) > 0 && n.dependents > 0:
		if slices.ContainsFunc(t.graph.dependents(n.ref.UID), func(d nodeState) bool { return d.deletingDependents }) {
			// A dependent waits for it too: a cycle may block every one of them.
			// Kubernetes' collector makes this object's references non-blocking.
			logger.V(2).Info("Object and one of its dependents both wait for their dependents; making its owner references non-blocking", "object", n.ref)
			if latest, err = t.objects.updateOwners(ctx, n.ref, latest, unblocking); err != nil || latest == nil {
				return err
			}
		}
		logger.V(2).Info("Deleting object in the foreground: an owner waits for its dependents and it has its own", "object", n.ref)
		return t.deleteObject(ctx, n.ref, latest, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(latest.Finalizers, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		logger.V(2).Info("Deleting object: none of its owners exists", "object", n.ref, "propagationPolicy", policy)
		return t.deleteObject(ctx, n.ref, latest, policy)
	}
}

// deleteObject deletes r as latest shows it; r gone is no error.
func (t *term) deleteObject(ctx context.Context, r objectRef, latest *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	err := t.objects.delete(ctx, r, latest.ResourceVersion, latest.OwnerReferences, policy)
	if apierrors.IsNotFound(err) {
		t.graph.verifiedAbsent(r)
		return nil
	}
	return err
}

// deleteDependentsFirst completes the foreground deletion of n once no dependent
// blocks it (blockOwnerDeletion), and meanwhile makes sure each blocking dependent is
// being deleted.
func (t *term) deleteDependentsFirst(ctx context.Context, n nodeState) error {
	var blockers []nodeState
	for _, dep := range t.graph.dependents(n.ref.UID) {
		if dep.blocks(n.ref.UID) {
			blockers = append(blockers, dep)
		}
	}
	if len(blockers) == 0 {
		klog.FromContext(ctx).V(2).Info("No dependent blocks the object's deletion any more; removing its foregroundDeletion finalizer", "object", n.ref)
		_, err := t.objects.removeFinalizer(ctx, n.ref, metav1.FinalizerDeleteDependents)
		return err
	}
	for _, dep := range blockers {
		if !dep.deletingDependents {
			t.deleter.Add(dep.ref.UID)
		}
	}
	return nil
}

// classify sorts item's owner references: to owners that exist (solid), to owners
// that do not (dangling), to owners being deleted in the foreground (waiting), and to
// owners that do not exist any more and whose dependents the collector orphaned
// (orphaned).
func (t *term) classify(ctx context.Context, item objectRef, latest *metav1.PartialObjectMetadata) (solid, dangling, waiting, orphaned []metav1.OwnerReference, err error) {
	for _, o := range latest.OwnerReferences {
		gone, owner, err := t.absent(ctx, o, item)
		switch {
		case err != nil:
			return nil, nil, nil, nil, err
		case gone:
			was, err := t.referredAtOrphaning(ctx, latest, item, o.UID)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			if was {
				orphaned = append(orphaned, o)
				continue
			}
			dangling = append(dangling, o)
		case waitsForDependents(owner):
			waiting = append(waiting, o)
		default:
			solid = append(solid, o)
		}
	}
	return solid, dangling, waiting, orphaned, nil
}

// absent reports whether the owner item's reference o names does not exist (none of
// that name in item's namespace, or one with another uid), and else returns it.
func (t *term) absent(ctx context.Context, o metav1.OwnerReference, item objectRef) (bool, *metav1.PartialObjectMetadata, error) {
	key := refOf(o, "")
	if t.graph.isAbsent(key) {
		return true, nil, nil
	}
	key.Namespace = item.Namespace
	if t.graph.isAbsent(key) {
		return true, nil, nil
	}
	_, namespaced, err := t.objects.resource(o.APIVersion, o.Kind)
	if err != nil {
		return false, nil, err
	}
	if !namespaced {
		key.Namespace = ""
	} else if item.Namespace == "" {
		return false, nil, errClusterScopedDependent
	}
	owner, err := t.objects.get(ctx, key)
	if apierrors.IsNotFound(err) || (err == nil && owner.UID != o.UID) {
		t.graph.markAbsent(key)
		return true, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return false, owner, nil
}

// errOrphaning retries an object whose absent owner's orphaning is being completed.
var errOrphaning = errors.New("the owner's dependents are being orphaned")

// referredAtOrphaning reports whether item (latest as the API reads it now) referred
// to owner when the collector finished orphaning owner's dependents: a reference the
// graph learned of too late to be removed then (item reported late by its monitor). A
// reference added after the orphaning is not, and is treated as any reference to an
// absent owner. An item unchanged since then had it; one changed since is read as it
// was then, and if that history is compacted, taken to have had it: nothing is
// deleted on a guess.
func (t *term) referredAtOrphaning(ctx context.Context, latest *metav1.PartialObjectMetadata, item objectRef, owner types.UID) (bool, error) {
	rev, ok := t.graph.orphanedAt(owner)
	switch {
	case !ok:
		return false, nil
	case rev == 0:
		return false, errOrphaning
	}
	if cur, err := strconv.ParseInt(latest.ResourceVersion, 10, 64); err == nil && cur <= rev {
		return true, nil
	}
	then, err := t.objects.getAt(ctx, item, rev)
	switch {
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return then != nil && then.UID == item.UID &&
		slices.ContainsFunc(then.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == owner }), nil
}

func uids(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.UID)
	}
	return out
}
