package garbagecollector

import (
	"context"
	"fmt"
	"math"

	"github.com/concordproject/concord/reconcile"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// orphanParallelism is how many dependents of one owner are orphaned at once.
const orphanParallelism = 16

// attemptToOrphan completes the deletion of an owner deleted with the orphan
// finalizer: every dependent loses its reference to the owner (each write
// conditional on the dependent's resourceVersion), then the finalizer is removed,
// which deletes the owner. A failure leaves the finalizer, and the whole is retried.
func (t *term) attemptToOrphan(ctx context.Context, uid types.UID) (reconcile.Result, error) {
	n, ok := t.graph.state(uid)
	if !ok {
		return reconcile.Result{}, nil
	}
	deps := t.graph.dependents(uid)
	var g errgroup.Group
	g.SetLimit(orphanParallelism)
	for _, dep := range deps {
		g.Go(func() error {
			_, err := t.objects.updateOwners(ctx, dep.ref, nil, withoutOwners(uid))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return reconcile.Result{}, fmt.Errorf("orphaning the dependents of %s: %w", n.ref, err)
	}
	klog.FromContext(ctx).V(2).Info("Dependents orphaned; removing the owner's orphan finalizer", "object", n.ref, "dependents", len(deps))
	// Remembered before the owner can go, so that a dependent the graph learns of
	// late is orphaned too (it waits for the revision). Forgotten if the finalizer
	// was not the collector's to remove (the owner gone, or its deletion switched to
	// another policy), unless an earlier attempt may have removed it; if the removal
	// may have happened unseen (an error), every reference to the owner is taken as
	// older than it.
	prev, earlier := t.graph.orphanedAt(uid)
	t.graph.markOrphaned(uid, 0)
	rev, err := t.objects.removeFinalizer(ctx, n.ref, metav1.FinalizerOrphanDependents)
	switch {
	case err != nil:
		t.graph.markOrphaned(uid, math.MaxInt64)
	case rev != 0:
		t.graph.markOrphaned(uid, rev)
	case earlier:
		t.graph.markOrphaned(uid, prev)
	default:
		t.graph.forgetOrphaned(uid)
	}
	return reconcile.Result{}, err
}
