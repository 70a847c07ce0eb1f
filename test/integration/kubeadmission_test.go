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
	claim, err := admin.CoreV1().PersistentVolumeClaims("plugins").Create(ctx, newClaim("data"), metav1.CreateOptions{})
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

// TestStorageProtection: the protection finalizers kube's admission gives claims and
// volumes hold a deletion only while the object is in use, as with kube's
// controller manager: an unused claim and an unbound volume go at once, a claim a
// scheduled Pod mounts stays Terminating until the Pod goes (finished or not), and a namespace with
// claims is deleted.
func TestStorageProtection(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	namespace(t, admin, "claims", nil)
	claims := admin.CoreV1().PersistentVolumeClaims("claims")
	for _, name := range []string{"unused", "mounted", "left"} {
		if _, err := claims.Create(ctx, newClaim(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := newPod("user", "")
	pod.Spec.NodeName = "node-1" // scheduled
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mounted"}}}}
	if _, err := admin.CoreV1().Pods("claims").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv, err := admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-unbound"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}},
	}, metav1.CreateOptions{})
	if err != nil || len(pv.Finalizers) != 1 {
		t.Fatalf("a volume: %v, finalizers %v; want pv-protection", err, pv)
	}

	// Finished, the pod still holds its claim (kube's pvc-protection).
	user, err := admin.CoreV1().Pods("claims").Get(ctx, "user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user.Status.Phase = corev1.PodSucceeded
	if _, err := admin.CoreV1().Pods("claims").UpdateStatus(ctx, user, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"unused", "mounted"} {
		if err := claims.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.CoreV1().PersistentVolumes().Delete(ctx, "pv-unbound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, "the unused claim", func() error { _, err := claims.Get(ctx, "unused", metav1.GetOptions{}); return err })
	gone(t, "the unbound volume", func() error {
		_, err := admin.CoreV1().PersistentVolumes().Get(ctx, "pv-unbound", metav1.GetOptions{})
		return err
	})
	// Reconciled with the unused claim, which is gone.
	if got, err := claims.Get(ctx, "mounted", metav1.GetOptions{}); err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("the mounted claim: %v, %+v; want it Terminating while the (finished) pod uses it", err, got)
	}
	if err := admin.CoreV1().Pods("claims").Delete(ctx, "user", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, "the claim the pod mounted, once the pod is gone", func() error {
		_, err := claims.Get(ctx, "mounted", metav1.GetOptions{})
		return err
	})
	if err := admin.CoreV1().Namespaces().Delete(ctx, "claims", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNamespaceGone(t, c, admin, "claims")
}

// gone waits until get answers NotFound.
func gone(t *testing.T, what string, get func() error) {
	t.Helper()
	waitFor(t, what+" to be gone", func() (bool, error) {
		err := get()
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// newClaim returns a claim of 1Gi.
func newClaim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
}

// podBinding: a Pod is bound to a node through its binding subresource (what a
// scheduler does) and through the bindings resource, as kube-apiserver binds it:
// spec.nodeName, the Binding's annotations and the PodScheduled condition; a dry
// run binds nothing, a bound Pod is not bound again (409), a target that is not a
// node's name is refused as kube refuses it (500).
func podBinding(t *testing.T, c *harness.Cluster, _ string) {
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	namespace(t, admin, "binding", nil)
	pods := admin.CoreV1().Pods("binding")
	for _, name := range []string{"first", "second"} {
		if _, err := pods.Create(ctx, newPod(name, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(pod, node string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod, Annotations: map[string]string{"scheduler": "test"},
			Labels: map[string]string{"topology.kubernetes.io/zone": "z1"}},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	}
	// A scheduler's nomination, which the binding clears (ClearingNominatedNodeNameAfterBinding).
	first, err := pods.Get(ctx, "first", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first.Status.NominatedNodeName = "node-a"
	if _, err := pods.UpdateStatus(ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctx, bind("first", "node-a"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if p, _ := pods.Get(ctx, "first", metav1.GetOptions{}); p.Spec.NodeName != "" {
		t.Fatalf("a dry run bound the pod to %q", p.Spec.NodeName)
	}
	if err := pods.Bind(ctx, bind("first", "node-a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The bindings resource, as older schedulers use it.
	if err := admin.CoreV1().RESTClient().Post().Namespace("binding").Resource("bindings").
		Body(bind("second", "node-b")).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	for pod, node := range map[string]string{"first": "node-a", "second": "node-b"} {
		p, err := pods.Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scheduled := len(p.Status.Conditions) == 1 && p.Status.Conditions[0].Type == corev1.PodScheduled && p.Status.Conditions[0].Status == corev1.ConditionTrue
		if p.Spec.NodeName != node || p.Annotations["scheduler"] != "test" || !scheduled {
			t.Errorf("%s: node %q, annotations %v, conditions %+v; want %s, the binding's annotation, PodScheduled", pod, p.Spec.NodeName, p.Annotations, p.Status.Conditions, node)
		}
		// PodTopologyLabelsAdmission (on by default since 1.35): the Binding's labels.
		if p.Labels["topology.kubernetes.io/zone"] != "z1" || p.Status.NominatedNodeName != "" {
			t.Errorf("%s: labels %v, nominated node %q; want the binding's label and no nomination", pod, p.Labels, p.Status.NominatedNodeName)
		}
	}
	err = pods.Bind(ctx, bind("first", "node-b"), metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `pod first is already assigned to node "node-a"`) {
		t.Errorf("binding a bound pod again: %v, want kube's 409", err)
	}
	err = pods.Bind(ctx, bind("first", "Bad_Name"), metav1.CreateOptions{})
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != 500 || !strings.Contains(err.Error(), "target.name: Invalid value") {
		t.Errorf("a target that is no node's name: %v, want kube's 500", err)
	}
	if err := pods.Bind(ctx, bind("missing", "node-a"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("binding a missing pod: %v, want 404", err)
	}
}
