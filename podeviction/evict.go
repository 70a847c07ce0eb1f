package podeviction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	podv1 "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/utils/ptr"
)

// The resources: Pods, and the PodDisruptionBudgets that guard them.
var (
	Pods    = schema.GroupResource{Resource: "pods"}
	Budgets = schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}

	evictionKind = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
)

// ErrNoPods means the registry serves no Pods in v1.
var ErrNoPods = errors.New("pods are not served in v1")

// Evictor evicts the Pods of a registry's store.
type Evictor struct {
	reg   *registry.Registry
	store *store.Store
}

// New returns the Evictor of the Pods and PodDisruptionBudgets reg serves from st.
func New(reg *registry.Registry, st *store.Store) *Evictor {
	return &Evictor{reg: reg, store: st}
}

// ConfigurePods gives Pods their eviction subresource.
func (e *Evictor) ConfigurePods(res *registry.Resource) error {
	res.AddAction("eviction", registry.Action{Kind: evictionKind, Versions: []string{"v1beta1"},
		NameMismatch: "name in URL does not match name in Eviction object",
		Do: func(ctx context.Context, pod *unstructured.Unstructured, body []byte, dryRun bool) (runtime.Object, error) {
			eviction := &policyv1.Eviction{}
			if err := json.Unmarshal(body, eviction); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not an Eviction: %v", err))
			}
			return e.Evict(ctx, pod, eviction, dryRun)
		}})
	return nil
}

// Evict evicts pod (as stored) as eviction asks, dryRun if the request says so, and
// answers Success.
func (e *Evictor) Evict(ctx context.Context, stored *unstructured.Unstructured, eviction *policyv1.Eviction, dryRun bool) (*metav1.Status, error) {
	opts, err := deleteOptions(eviction, dryRun)
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(stored.Object, pod); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if skipsBudgets(pod) {
		return e.deletePod(ctx, pod, opts, stillSkipsBudgets)
	}
	budget, err := e.budgetOf(ctx, pod)
	if err != nil || budget == nil {
		if err != nil {
			return nil, err
		}
		return e.deletePod(ctx, pod, opts, nil)
	}
	if sparesUnhealthy(pod, budget) {
		// Deleting an unready Pod disrupts nothing, as long as it stays unready.
		return e.deletePod(ctx, pod, opts, func(current *corev1.Pod) error {
			if podv1.IsPodReady(current) {
				return stillProcessing(budget.Name)
			}
			return nil
		})
	}
	if err := e.spend(ctx, budget, pod.Name, slices.Contains(opts.DryRun, metav1.DryRunAll)); err != nil {
		return nil, err
	}
	return e.deletePod(ctx, pod, opts, nil)
}

// deleteOptions returns the options of eviction's deletion of the Pod: its own, with
// the request's dry run (dryRun), which they must not contradict.
func deleteOptions(eviction *policyv1.Eviction, dryRun bool) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if eviction.DeleteOptions != nil {
		opts = eviction.DeleteOptions.DeepCopy()
	}
	if ptr.Deref(opts.IgnoreStoreReadErrorWithClusterBreakingPotential, false) {
		path := field.NewPath("deleteOptions", "ignoreStoreReadErrorWithClusterBreakingPotential")
		return nil, apierrors.NewInvalid(evictionKind.GroupKind(), eviction.Name, field.ErrorList{
			field.Invalid(path, true, "can not be set for pod eviction, try after removing the option")})
	}
	var requested []string
	if dryRun {
		requested = []string{metav1.DryRunAll}
	}
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = requested
	case len(requested) > 0 && !slices.Equal(requested, opts.DryRun):
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", requested, opts.DryRun)}}
	}
	return opts, nil
}

// skipsBudgets reports whether pod goes without asking its budgets: it has finished,
// has not started (Pending) or is being deleted, so evicting it disrupts nothing more.
func skipsBudgets(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// stillSkipsBudgets refuses the deletion of a Pod that no longer skips its budgets
// (it started since it was read), as a conflict.
func stillSkipsBudgets(current *corev1.Pod) error {
	if skipsBudgets(current) {
		return nil
	}
	return apierrors.NewConflict(Pods, current.Name, errors.New("the pod started while it was being evicted; retry"))
}

// sparesUnhealthy reports whether pod, if unready, may go without spending budget's
// disruptions: the budget lets unhealthy Pods always go, or (by default) it has the
// healthy Pods it wants.
func sparesUnhealthy(pod *corev1.Pod, budget *policyv1.PodDisruptionBudget) bool {
	if podv1.IsPodReady(pod) {
		return false
	}
	if p := budget.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return budget.Status.DesiredHealthy > 0 && budget.Status.CurrentHealthy >= budget.Status.DesiredHealthy
}

// budgetOf returns the one PodDisruptionBudget of pod's namespace whose selector
// matches it, nil if none does; more than one is kube's 500.
func (e *Evictor) budgetOf(ctx context.Context, pod *corev1.Pod) (*policyv1.PodDisruptionBudget, error) {
	res := e.reg.Served(Budgets, "v1")
	if res == nil {
		return nil, nil
	}
	list, err := e.store.List(ctx, store.Ref{Resource: res, Version: "v1", Namespace: pod.Namespace}, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var found *policyv1.PodDisruptionBudget
	for i := range list.Items {
		budget := &policyv1.PodDisruptionBudget{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, budget); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		selector, err := metav1.LabelSelectorAsSelector(budget.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue // a selector that cannot be parsed matches nothing
		}
		if found != nil {
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
				Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}
		}
		found = budget
	}
	return found, nil
}
