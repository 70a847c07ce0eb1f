package integration

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestPodGracefulDeletion: Pods are deleted as kube-apiserver deletes them. A Pod on
// a node stays, Terminating, for its grace period (the request's, else its
// terminationGracePeriodSeconds, 30 by default): deletionTimestamp that far ahead,
// deletionGracePeriodSeconds, its generation one more. A later deletion may only
// shorten the period (the timestamp moves back by the difference), one of 0 removes
// it, a negative one counts as 1 s. A Pod on no node, or finished, has no grace: it is
// written as deleted, then deleted (watchers see both). A finalizer keeps a Pod
// deleted with 0; a dry run changes nothing; an eviction's options carry its period.
func TestPodGracefulDeletion(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	namespace(t, admin, "grace", nil)
	pods := admin.CoreV1().Pods("grace")

	placed := createPod(t, admin, "placed", "node-1", nil)
	before := time.Now().Truncate(time.Second)
	kept := deletePod(t, admin, "placed", metav1.DeleteOptions{})
	wantTerminating(t, kept, 30, placed.Generation+1)
	if at := kept.DeletionTimestamp.Time; at.Before(before.Add(30*time.Second)) || at.After(time.Now().Add(31*time.Second)) {
		t.Errorf("deletionTimestamp %v, want 30 s after the deletion (%v)", at, before)
	}
	if got, err := pods.Get(ctx, "placed", metav1.GetOptions{}); err != nil || got.ResourceVersion != kept.ResourceVersion {
		t.Fatalf("the terminating pod: %v, %+v; want it stored as the deletion answered", err, got)
	}
	longer := deletePod(t, admin, "placed", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](60)})
	if longer.ResourceVersion != kept.ResourceVersion {
		t.Errorf("a longer grace period changed the pod: resourceVersion %s, was %s", longer.ResourceVersion, kept.ResourceVersion)
	}
	shorter := deletePod(t, admin, "placed", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](10)})
	wantTerminating(t, shorter, 10, kept.Generation)
	if moved := kept.DeletionTimestamp.Sub(shorter.DeletionTimestamp.Time); moved != 20*time.Second {
		t.Errorf("shortening 30 s to 10 s moved deletionTimestamp back by %v, want 20s", moved)
	}
	deletePod(t, admin, "placed", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if _, err := pods.Get(ctx, "placed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod deleted with 0: %v, want it gone", err)
	}

	createPod(t, admin, "negative", "node-1", nil)
	wantTerminating(t, deletePod(t, admin, "negative", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](-5)}), 1, 2)
	createPod(t, admin, "own-period", "node-1", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](7) })
	wantTerminating(t, deletePod(t, admin, "own-period", metav1.DeleteOptions{}), 7, 2)

	dry := deletePod(t, admin, "own-period", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), DryRun: []string{metav1.DryRunAll}})
	if got, err := pods.Get(ctx, "own-period", metav1.GetOptions{}); err != nil || ptr.Deref(got.DeletionGracePeriodSeconds, -1) != 7 || dry.ResourceVersion != got.ResourceVersion {
		t.Errorf("after a dry run with 0: %v, %+v; want the pod still terminating with 7 s", err, got)
	}

	createPod(t, admin, "held", "node-1", func(p *corev1.Pod) { p.Finalizers = []string{"example.com/hold"} })
	wantTerminating(t, deletePod(t, admin, "held", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), 0, 2)
	if _, err := pods.Patch(ctx, "held", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, "the pod whose finalizer was removed", func() error { _, err := pods.Get(ctx, "held", metav1.GetOptions{}); return err })
	// Within its grace period, a Pod stays once its finalizers are gone.
	createPod(t, admin, "held-graceful", "node-1", func(p *corev1.Pod) { p.Finalizers = []string{"example.com/hold"} })
	deletePod(t, admin, "held-graceful", metav1.DeleteOptions{})
	released, err := pods.Patch(ctx, "held-graceful", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantTerminating(t, released, 30, 2)
	if got, err := pods.Get(ctx, "held-graceful", metav1.GetOptions{}); err != nil || len(got.Finalizers) != 0 {
		t.Fatalf("the pod released within its grace period: %v, %+v; want it there, terminating", err, got)
	}
	deletePod(t, admin, "held-graceful", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})

	// No grace on no node, nor once finished: written as deleted, then deleted.
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=unplaced", ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	createPod(t, admin, "unplaced", "", nil)
	answered := deletePod(t, admin, "unplaced", metav1.DeleteOptions{})
	wantTerminating(t, answered, 0, 2)
	wantEvents(t, w, watch.Added, watch.Modified, watch.Deleted)
	done := createPod(t, admin, "done", "node-1", nil)
	done.Status.Phase = corev1.PodSucceeded
	if _, err := pods.UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTerminating(t, deletePod(t, admin, "done", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)}), 0, 2)
	if _, err := pods.Get(ctx, "done", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the finished pod: %v, want it gone", err)
	}

	createPod(t, admin, "evicted", "node-1", nil)
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evicted"}, DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](5)}}
	if err := pods.EvictV1(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if got, err := pods.Get(ctx, "evicted", metav1.GetOptions{}); err != nil || got.DeletionTimestamp == nil || ptr.Deref(got.DeletionGracePeriodSeconds, -1) != 5 {
		t.Errorf("the evicted pod: %v, %+v; want it terminating with the eviction's 5 s", err, got)
	}

	// The namespace waits for its terminating pods, whose periods ran out, as with no
	// kubelet to delete them; a deletion with 0 lets it go.
	if err := admin.CoreV1().Namespaces().Delete(ctx, "grace", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the namespace to report its remaining pods", func() (bool, error) {
		ns, err := admin.CoreV1().Namespaces().Get(ctx, "grace", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range ns.Status.Conditions {
			if cond.Type == corev1.NamespaceContentRemaining && cond.Status == corev1.ConditionTrue {
				return cond.Message == "Some resources are remaining: pods. has 3 resource instances", nil
			}
		}
		return false, nil
	})
	for _, name := range []string{"negative", "own-period", "evicted"} {
		deletePod(t, admin, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
	waitNamespaceGone(t, c, admin, "grace")
}

// createPod creates the Pod name in namespace grace, on node (none if ""), changed by
// edit (if set).
func createPod(t *testing.T, admin kubernetes.Interface, name, node string, edit func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	pod := newPod(name, "")
	pod.Spec.NodeName = node
	if edit != nil {
		edit(pod)
	}
	created, err := admin.CoreV1().Pods("grace").Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// deletePod deletes the Pod name of namespace grace with opts and returns the Pod the
// server answered (a Pod's deletion answers the Pod, deleted or not).
func deletePod(t *testing.T, admin kubernetes.Interface, name string, opts metav1.DeleteOptions) *corev1.Pod {
	t.Helper()
	body, err := admin.CoreV1().RESTClient().Delete().Namespace("grace").Resource("pods").Name(name).Body(&opts).Do(t.Context()).Raw()
	if err != nil {
		t.Fatalf("deleting pod %s: %v", name, err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(body, pod); err != nil || pod.Kind != "Pod" {
		t.Fatalf("the deletion of pod %s answered %s (%v), want the Pod", name, body, err)
	}
	return pod
}

// wantTerminating checks that pod is being deleted with grace seconds and has
// generation.
func wantTerminating(t *testing.T, pod *corev1.Pod, grace, generation int64) {
	t.Helper()
	if pod.DeletionTimestamp == nil || ptr.Deref(pod.DeletionGracePeriodSeconds, -1) != grace || pod.Generation != generation {
		t.Errorf("pod %s: deletionTimestamp %v, deletionGracePeriodSeconds %v, generation %d; want one, %d, %d",
			pod.Name, pod.DeletionTimestamp, ptr.Deref(pod.DeletionGracePeriodSeconds, -1), pod.Generation, grace, generation)
	}
}

// wantEvents reads the next events of w and checks their types, the last one's
// object being deleted.
func wantEvents(t *testing.T, w watch.Interface, types ...watch.EventType) {
	t.Helper()
	for i, want := range types {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != want {
				t.Fatalf("event %d: %s %+v, want %s", i, ev.Type, ev.Object, want)
			}
			if pod, ok := ev.Object.(*corev1.Pod); want != watch.Added && (!ok || pod.DeletionTimestamp == nil) {
				t.Errorf("event %d (%s): %+v, want the pod with its deletionTimestamp", i, want, ev.Object)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no event %d (%s) in 30 s", i, want)
		}
	}
}
