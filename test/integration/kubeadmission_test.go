package integration

import (
	"strings"
	"testing"

	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestKubeAdmissionPlugins: kube-apiserver's own admission plugins of built-in
// resources act on writes through the assembled server, as on kube-apiserver (the
// differential corpus compares their results with kube's recorded answers):
// ServiceAccount, Priority, DefaultTolerationSeconds, TaintNodesByCondition,
// StorageObjectInUseProtection, LimitRanger and PodSecurity.
func TestKubeAdmissionPlugins(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	namespace(t, admin, "plugins", nil)

	pod, err := admin.CoreV1().Pods("plugins").Create(ctx, newPod("plain", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "default" || len(pod.Spec.Volumes) != 1 || !strings.HasPrefix(pod.Spec.Volumes[0].Name, "kube-api-access-") ||
		pod.Spec.Volumes[0].Projected == nil || len(pod.Spec.Containers[0].VolumeMounts) != 1 {
		t.Errorf("ServiceAccount: account %q, volumes %+v, mounts %+v; want default and its token volume mounted",
			pod.Spec.ServiceAccountName, pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts)
	}
	if pod.Spec.Priority == nil || *pod.Spec.Priority != 0 || pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("Priority: %v, %v; want 0 and PreemptLowerPriority", pod.Spec.Priority, pod.Spec.PreemptionPolicy)
	}
	if len(pod.Spec.Tolerations) != 2 || pod.Spec.Tolerations[0].Key != corev1.TaintNodeNotReady || *pod.Spec.Tolerations[0].TolerationSeconds != 300 {
		t.Errorf("DefaultTolerationSeconds: %+v; want not-ready and unreachable for 300 s", pod.Spec.Tolerations)
	}
	critical, err := admin.CoreV1().Pods("plugins").Create(ctx, newPod("critical", "system-cluster-critical"), metav1.CreateOptions{})
	if err != nil || *critical.Spec.Priority != 2000000000 {
		t.Errorf("a system-cluster-critical pod: %v, %v; want priority 2000000000", err, critical.Spec.Priority)
	}
	_, err = admin.CoreV1().Pods("plugins").Create(ctx, newPod("unknown", "no-such-class"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no PriorityClass with name no-such-class was found") {
		t.Errorf("a pod of an unknown PriorityClass: %v, want kube's 403", err)
	}

	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil || len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != corev1.TaintNodeNotReady {
		t.Errorf("TaintNodesByCondition: %v, taints %+v; want not-ready", err, node.Spec.Taints)
	}
	claim, err := admin.CoreV1().PersistentVolumeClaims("plugins").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}, metav1.CreateOptions{})
	if err != nil || len(claim.Finalizers) != 1 || claim.Finalizers[0] != "kubernetes.io/pvc-protection" || claim.Status.Phase != corev1.ClaimPending {
		t.Errorf("StorageObjectInUseProtection: %v, finalizers %v, phase %q; want pvc-protection, Pending", err, claim.Finalizers, claim.Status.Phase)
	}

	limitRanges(t, admin)
	podSecurity(t, admin)
}

// limitRanges: a LimitRange's default limit is applied to new pods' containers
// (LimitRanger), once the server has read it.
func limitRanges(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	if _, err := admin.CoreV1().LimitRanges("plugins").Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new pod gets the LimitRange's default CPU limit", func() (bool, error) {
		p, err := admin.CoreV1().Pods("plugins").Create(ctx, newPod("limited", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		got := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
		return got.String() == "500m", nil
	})
}

// podSecurity: a namespace that enforces the restricted level refuses a pod that
// sets none of what the level asks (runAsNonRoot, dropped capabilities, ...) with
// PodSecurity's 403.
func podSecurity(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	namespace(t, admin, "restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	waitFor(t, "an unrestricted pod is refused in the restricted namespace", func() (bool, error) {
		_, err := admin.CoreV1().Pods("restricted").Create(ctx, newPod("loose", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, nil // the namespace's labels not read yet
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
			t.Fatalf("an unrestricted pod in the restricted namespace: %v, want PodSecurity's 403", err)
		}
		return true, nil
	})
}

// namespace creates the namespace name with labels, and its default ServiceAccount
// unless a controller made it already.
func namespace(t *testing.T, admin kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	ctx := t.Context()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := admin.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// newPod returns a pod of one container, of priorityClass if not "".
func newPod(name, priorityClass string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{PriorityClassName: priorityClass,
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
}
