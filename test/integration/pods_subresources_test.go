package integration

import (
	"strings"
	"testing"

	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// podEviction: a Pod's eviction through client-go as kube-apiserver answers it
// with no disruption controller: a Pending Pod goes without looking at budgets; a
// running one is refused while its budget has not observed itself or allows no
// disruption (429 with the budget's reason), and goes once the budget allows it,
// which spends the disruption and records the Pod; two budgets are kube's 500.
func podEviction(t *testing.T, c *harness.Cluster, _ string) {
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	namespace(t, admin, "eviction", nil)
	pods := admin.CoreV1().Pods("eviction")
	// Evictions are posted without client-go's retries: a refusal is kube's 429 with
	// Retry-After 10, which client-go would wait out ten times.
	evict := func(name string, dryRun bool) error {
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "eviction"}}
		if dryRun {
			ev.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
		}
		return admin.CoreV1().RESTClient().Post().Namespace("eviction").Resource("pods").Name(name).SubResource("eviction").
			Body(ev).MaxRetries(0).Do(ctx).Error()
	}
	if _, err := pods.Create(ctx, newPod("pending", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict("pending", false); err != nil {
		t.Fatalf("evicting a Pending pod: %v", err)
	}
	if _, err := pods.Get(ctx, "pending", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the evicted pod: %v, want it gone", err)
	}
	runningPod(t, admin, "guarded")
	budgets := admin.PolicyV1().PodDisruptionBudgets("eviction")
	one := intstr.FromInt32(1)
	budget, err := budgets.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "budget"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, evict("guarded", false), "The disruption budget budget is still being processed by the server.")
	budget.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: budget.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if budget, err = budgets.UpdateStatus(ctx, budget, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, evict("guarded", false), "The disruption budget budget needs 1 healthy pods and has 1 currently")
	budget.Status.DisruptionsAllowed, budget.Status.CurrentHealthy = 1, 2
	if _, err = budgets.UpdateStatus(ctx, budget, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict("guarded", true); err != nil {
		t.Fatalf("a dry run of an allowed eviction: %v", err)
	}
	if err := evict("guarded", false); err != nil {
		t.Fatalf("an allowed eviction: %v", err)
	}
	spent, err := budgets.Get(ctx, "budget", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, recorded := spent.Status.DisruptedPods["guarded"]; spent.Status.DisruptionsAllowed != 0 || !recorded {
		t.Errorf("the budget after the eviction: %+v, want no disruption left and the pod recorded", spent.Status)
	}
	if _, err := pods.Get(ctx, "guarded", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the evicted pod: %v, want it gone", err)
	}
	runningPod(t, admin, "twice")
	for _, name := range []string{"a", "b"} {
		if _, err := budgets.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "twice"}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = evict("twice", false)
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != 500 || !strings.Contains(err.Error(), "more than one PodDisruptionBudget") {
		t.Errorf("evicting a pod of two budgets: %v, want kube's 500", err)
	}
}

// runningPod creates the Pod name, labelled app=name, and makes it Running and Ready
// (as its kubelet would).
func runningPod(t *testing.T, admin kubernetes.Interface, name string) {
	t.Helper()
	pods := admin.CoreV1().Pods("eviction")
	pod := newPod(name, "")
	pod.Labels = map[string]string{"app": name}
	pod, err := pods.Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	if _, err := pods.UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantRefused checks that err is kube's 429 for an eviction its budget refuses, for
// the reason cause.
func wantRefused(t *testing.T, err error, cause string) {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsTooManyRequests(err) {
		t.Fatalf("an eviction the budget does not allow: %v, want 429", err)
	}
	details := status.Status().Details
	if details == nil || len(details.Causes) != 1 || details.Causes[0].Type != policyv1.DisruptionBudgetCause || details.Causes[0].Message != cause {
		t.Errorf("the refusal's details: %+v, want the DisruptionBudget cause %q", details, cause)
	}
}

// podEphemeralContainersAndResize: a debugging container added through the
// ephemeralcontainers subresource (and nothing else the update carries), one kube's
// validation refuses, and a resize of a container's CPU through the resize
// subresource, with kube's refusal of a resize that changes the Pod's QoS class.
func podEphemeralContainersAndResize(t *testing.T, c *harness.Cluster, _ string) {
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	namespace(t, admin, "debugging", nil)
	pods := admin.CoreV1().Pods("debugging")
	pod := newPod("target", "")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}
	pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "c",
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Stdin: true, TTY: true}}}
	pod.Spec.ActiveDeadlineSeconds = new(int64(5)) // not the subresource's to change
	debugged, err := pods.UpdateEphemeralContainers(ctx, "target", pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(debugged.Spec.EphemeralContainers) != 1 || debugged.Spec.ActiveDeadlineSeconds != nil || debugged.Generation != 2 {
		t.Errorf("after adding a debug container: %d ephemeral containers, activeDeadlineSeconds %v, generation %d; want 1, none, 2",
			len(debugged.Spec.EphemeralContainers), debugged.Spec.ActiveDeadlineSeconds, debugged.Generation)
	}
	debugged.Spec.EphemeralContainers = append(debugged.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}})
	if _, err := pods.UpdateEphemeralContainers(ctx, "target", debugged, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container") {
		t.Errorf("an ephemeral container with ports: %v, want kube's 422", err)
	}
	patch := []byte(`{"spec":{"containers":[{"name":"c","image":"other","resources":{"requests":{"cpu":"150m"}}}]}}`)
	resized, err := pods.Patch(ctx, "target", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	got := resized.Spec.Containers[0]
	if cpu := got.Resources.Requests[corev1.ResourceCPU]; cpu.String() != "150m" || got.Image != "registry.k8s.io/pause:3.10" {
		t.Errorf("after the resize: cpu request %s, image %s; want 150m and the image unchanged", cpu.String(), got.Image)
	}
	patch = []byte(`{"spec":{"containers":[{"name":"c","resources":{"requests":null,"limits":null}}]}}`)
	if _, err := pods.Patch(ctx, "target", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize"); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "Pod QOS Class may not change as a result of resizing") {
		t.Errorf("a resize that makes the pod BestEffort: %v, want kube's 422", err)
	}
}

// podExecNeedsCreate: exec through GET (kubectl's WebSocket) is authorized for
// get on pods/exec by the server's filter, and then, as kube checks it, for create:
// a user allowed only get is refused in kube's words, one allowed create reaches the
// Pod (on no node: kube's 400).
func podExecNeedsCreate(t *testing.T, c *harness.Cluster, _ string) {
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	namespace(t, admin, "exec", nil)
	if _, err := admin.CoreV1().Pods("exec").Create(ctx, newPod("target", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "exec"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"get"}}}}
	if role, err := admin.RbacV1().Roles("exec").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	} else if _, err := admin.RbacV1().RoleBindings("exec").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "exec"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := c.Servers[0].Config()
	cfg.Impersonate.UserName = "bob"
	bob := kubernetes.NewForConfigOrDie(cfg)
	exec := func() error {
		return bob.CoreV1().RESTClient().Get().Namespace("exec").Resource("pods").Name("target").SubResource("exec").
			Param("command", "ls").Param("stdout", "true").Do(ctx).Error()
	}
	// Until the role is seen, the filter refuses get; then kube's own check refuses
	// create, with its bare reason.
	waitFor(t, "bob's role", func() (bool, error) {
		err := exec()
		return err != nil && !strings.Contains(err.Error(), "cannot get"), nil
	})
	if err := exec(); !apierrors.IsForbidden(err) || err.Error() != `pods "target" is forbidden: ` {
		t.Errorf("exec by a user allowed only get: %v, want kube's 403 for create", err)
	}
	role.Rules[0].Verbs = []string{"get", "create"}
	if _, err := admin.RbacV1().Roles("exec").Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob's create", func() (bool, error) { return apierrors.IsBadRequest(exec()), nil })
	if err := exec(); err == nil || !strings.Contains(err.Error(), "pod target does not have a host assigned") {
		t.Errorf("exec by a user allowed create: %v, want kube's 400", err)
	}
}
