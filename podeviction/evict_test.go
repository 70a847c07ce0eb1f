package podeviction

import (
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A budget refuses an eviction as kube does, with kube's reason for each state of its
// status, and allows one it has a disruption for.
func TestAllows(t *testing.T) {
	condition := func(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
		return []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: status, Reason: reason, Message: message}}
	}
	for _, c := range []struct {
		name   string
		status policyv1.PodDisruptionBudgetStatus
		code   int32
		cause  string
	}{
		{"unobserved", policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}, http.StatusTooManyRequests, "The disruption budget b is still being processed by the server."},
		{"negative", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: -1}, http.StatusForbidden,
			"The disruption budget b does not allow evicting pods currently: pdb disruptions allowed is negative"},
		{"too few healthy", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 2}, http.StatusTooManyRequests,
			"The disruption budget b needs 2 healthy pods and has 1 currently"},
		{"sync failed", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 2,
			Conditions: condition(metav1.ConditionFalse, policyv1.SyncFailedReason, "boom")}, http.StatusTooManyRequests,
			"The disruption budget b does not allow evicting pods currently because it failed sync: boom"},
		{"condition says", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 3, DesiredHealthy: 2,
			Conditions: condition(metav1.ConditionFalse, "Other", "why")}, http.StatusTooManyRequests,
			"The disruption budget b does not allow evicting pods currently (Other): why"},
		{"no reason", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 3, DesiredHealthy: 2}, http.StatusTooManyRequests,
			"The disruption budget b does not allow evicting pods currently"},
		{"allowed", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 1}, 0, ""},
	} {
		b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 1}, Status: c.status}
		err := allows(b)
		if c.code == 0 {
			if err != nil {
				t.Errorf("%s: %v, want allowed", c.name, err)
			}
			continue
		}
		status, ok := err.(apierrors.APIStatus)
		if !ok || status.Status().Code != c.code || len(status.Status().Details.Causes) != 1 ||
			status.Status().Details.Causes[0].Message != c.cause || status.Status().Details.Causes[0].Type != policyv1.DisruptionBudgetCause {
			t.Errorf("%s: %v, want %d with the cause %q", c.name, err, c.code, c.cause)
		}
	}
}

// Finished, Pending and deleting Pods skip their budgets; an unready Pod is spared
// the budget when it says unhealthy Pods may go, or has the healthy Pods it wants.
func TestWhoSkipsBudgets(t *testing.T) {
	pod := func(phase corev1.PodPhase, ready bool) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	for phase, want := range map[corev1.PodPhase]bool{corev1.PodPending: true, corev1.PodSucceeded: true, corev1.PodFailed: true, corev1.PodRunning: false} {
		if got := skipsBudgets(pod(phase, false)); got != want {
			t.Errorf("a %s pod skips budgets: %v, want %v", phase, got, want)
		}
	}
	deleting := pod(corev1.PodRunning, true)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	if !skipsBudgets(deleting) {
		t.Error("a deleting pod does not skip budgets")
	}
	healthy := &policyv1.PodDisruptionBudget{Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 2, DesiredHealthy: 2}}
	always := &policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow)}}
	short := &policyv1.PodDisruptionBudget{Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 2}}
	for _, c := range []struct {
		name   string
		ready  bool
		budget *policyv1.PodDisruptionBudget
		want   bool
	}{{"unready, healthy budget", false, healthy, true}, {"unready, always allowed", false, always, true},
		{"unready, short budget", false, short, false}, {"ready", true, healthy, false}} {
		if got := sparesUnhealthy(pod(corev1.PodRunning, c.ready), c.budget); got != c.want {
			t.Errorf("%s: spared %v, want %v", c.name, got, c.want)
		}
	}
}

// The Eviction's delete options take the request's dry run, which they may not
// contradict, and may not ask to ignore store read errors.
func TestDeleteOptions(t *testing.T) {
	eviction := func(opts *metav1.DeleteOptions) *policyv1.Eviction {
		return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p"}, DeleteOptions: opts}
	}
	if opts, err := deleteOptions(eviction(nil), true); err != nil || len(opts.DryRun) != 1 || opts.DryRun[0] != metav1.DryRunAll {
		t.Errorf("the request's dry run: %v %v", opts, err)
	}
	if _, err := deleteOptions(eviction(&metav1.DeleteOptions{DryRun: []string{"Other"}}), true); err == nil ||
		err.Error() != "Non-matching dry-run options in request and content: [All] and [Other]" {
		t.Errorf("contradicting dry runs: %v", err)
	}
	if _, err := deleteOptions(eviction(&metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)}), false); !apierrors.IsInvalid(err) {
		t.Errorf("ignoring store read errors: %v, want 422", err)
	}
}
