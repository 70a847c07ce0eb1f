package podeviction

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/concordproject/concord/registry/store"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
)

// maxDisruptedPods is how many evictions a budget may hold that its controller has not
// yet seen through: kube refuses more.
const maxDisruptedPods = 2000

// Why a budget refuses an eviction outright (403).
var (
	ErrNegativeAllowance = errors.New("pdb disruptions allowed is negative")
	ErrTooManyPending    = errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller")
)

// budgetKind is how kube names budgets in its refusals.
var budgetKind = schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}

// spend takes one disruption from budget for the Pod pod: a status write of the
// budget's current state (the store retries it on conflict, checking again), with
// dryRun nothing written.
func (e *Evictor) spend(ctx context.Context, budget *policyv1.PodDisruptionBudget, pod string, dryRun bool) error {
	res := e.reg.Served(Budgets, "v1")
	ref := store.Ref{Resource: res, Version: "v1", Namespace: budget.Namespace, Name: budget.Name}
	_, _, err := e.store.Update(ctx, ref, func(_ context.Context, current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		b := &policyv1.PodDisruptionBudget{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, b); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if err := allows(b); err != nil {
			return nil, err
		}
		b.Status.DisruptionsAllowed--
		if b.Status.DisruptionsAllowed == 0 {
			pdbhelper.UpdateDisruptionAllowedCondition(b)
		}
		if b.Status.DisruptedPods == nil {
			b.Status.DisruptedPods = map[string]metav1.Time{}
		}
		// The disruption controller counts the Pod as gone until it sees it go, or
		// forgets it after a while.
		b.Status.DisruptedPods[pod] = metav1.NewTime(time.Now())
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return &unstructured.Unstructured{Object: m}, nil
	}, store.UpdateOptions{WriteOptions: store.WriteOptions{Subresource: "status", DryRun: dryRun}})
	return err
}

// allows says why b allows no eviction now, nil if it allows one.
func allows(b *policyv1.PodDisruptionBudget) error {
	switch {
	case b.Status.ObservedGeneration < b.Generation:
		return stillProcessing(b.Name)
	case b.Status.DisruptionsAllowed < 0:
		return refused(b.Name, ErrNegativeAllowance, "pdb disruptions allowed is negative")
	case len(b.Status.DisruptedPods) > maxDisruptedPods:
		return refused(b.Name, ErrTooManyPending, "too many pending evictions not confirmed by PDB controller")
	case b.Status.DisruptionsAllowed == 0:
		return tooManyRequests(exhausted(b), 0)
	}
	return nil
}

// exhausted says, as kube does, why b allows no disruption: a failed sync, too few
// healthy Pods, or what its DisruptionAllowed condition says.
func exhausted(b *policyv1.PodDisruptionBudget) string {
	c := meta.FindStatusCondition(b.Status.Conditions, policyv1.DisruptionAllowedCondition)
	explained := c != nil && c.Status == metav1.ConditionFalse && c.Message != ""
	switch {
	case explained && c.Reason == policyv1.SyncFailedReason:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", b.Name, c.Message)
	case b.Status.CurrentHealthy <= b.Status.DesiredHealthy:
		return fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy)
	case explained:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", b.Name, c.Reason, c.Message)
	}
	return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", b.Name)
}

// stillProcessing is kube's answer while a budget's status lags its spec: come back
// in 10 seconds.
func stillProcessing(budget string) error {
	return tooManyRequests(fmt.Sprintf("The disruption budget %s is still being processed by the server.", budget), 10)
}

// tooManyRequests is kube's 429 for an eviction its budget does not allow now, with
// the budget's reason as a DisruptionBudget cause.
func tooManyRequests(cause string, retryAfter int) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", retryAfter)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
}

// refused is kube's 403 for a budget that allows no eviction at all (why: err).
func refused(budget string, err error, why string) error {
	out := apierrors.NewForbidden(budgetKind, budget, err)
	out.ErrStatus.Details.Causes = append(out.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", budget, why)})
	return out
}
