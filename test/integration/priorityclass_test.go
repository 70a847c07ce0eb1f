package integration

import (
	"testing"

	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestPriorityClasses: PriorityClasses with Kubernetes' validation and messages
// (checked against kube-apiserver 1.37), one globalDefault (403), system classes that
// cannot be deleted (403) and come back at the next start when removed behind the
// servers' backs; and the system namespaces, kept as Kubernetes keeps them.
func TestPriorityClasses(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	cs := c.Servers[0].Clientset(t)
	ctx := t.Context()
	pcs := cs.SchedulingV1().PriorityClasses()
	pc := func(name string, value int32, def bool) *schedulingv1.PriorityClass {
		return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: def}
	}

	t.Run("system classes", func(t *testing.T) {
		for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
			got, err := pcs.Get(ctx, name, metav1.GetOptions{})
			if err != nil || got.Value != value || got.GlobalDefault || *got.PreemptionPolicy != corev1.PreemptLowerPriority {
				t.Fatalf("%s: %+v %v", name, got, err)
			}
		}
		err := pcs.Delete(ctx, "system-node-critical", metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || err.Error() != `priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted` {
			t.Fatalf("deleting a system class: %v", err)
		}
	})

	t.Run("validation", func(t *testing.T) {
		for _, tc := range []struct {
			pc   *schedulingv1.PriorityClass
			want string
		}{
			{pc("high", 1000000001, false), `PriorityClass.scheduling.k8s.io "high" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000`},
			{pc("system-foo", 100, false), `PriorityClass.scheduling.k8s.io "system-foo" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-foo is not a known system priority class`},
			{pc("system-node-critical", 100, false), `PriorityClass.scheduling.k8s.io "system-node-critical" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000`},
			{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "odd"}, Value: 5, PreemptionPolicy: ptr.To(corev1.PreemptionPolicy("Foo"))},
				`PriorityClass.scheduling.k8s.io "odd" is invalid: preemptionPolicy: Unsupported value: "Foo": supported values: "PreemptLowerPriority", "Never"`},
		} {
			_, err := pcs.Create(ctx, tc.pc, metav1.CreateOptions{})
			wantInvalid(t, err, tc.want)
		}
		got, err := pcs.Create(ctx, pc("top", 1000000000, false), metav1.CreateOptions{})
		if err != nil || *got.PreemptionPolicy != corev1.PreemptLowerPriority {
			t.Fatalf("the highest user value: %+v %v", got, err)
		}
		_, err = pcs.Patch(ctx, "top", types.MergePatchType, []byte(`{"value":7}`), metav1.PatchOptions{})
		wantInvalid(t, err, `PriorityClass.scheduling.k8s.io "top" is invalid: value: Forbidden: may not be changed in an update.`)
		_, err = pcs.Patch(ctx, "top", types.MergePatchType, []byte(`{"preemptionPolicy":"Never"}`), metav1.PatchOptions{})
		wantInvalid(t, err, `PriorityClass.scheduling.k8s.io "top" is invalid: preemptionPolicy: Invalid value: "Never": field is immutable`)
		if _, err := pcs.Patch(ctx, "top", types.MergePatchType, []byte(`{"description":"x"}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("the description changes: %v", err)
		}
	})

	t.Run("one global default", func(t *testing.T) {
		if _, err := pcs.Create(ctx, pc("d1", 5, true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The admission reads an informer: poll until it has seen d1.
		want := `priorityclasses.scheduling.k8s.io "d2" is forbidden: PriorityClass d1 is already marked as default. Only one default can exist`
		waitFor(t, "a second default refused", func() (bool, error) {
			_, err := pcs.Create(ctx, pc("d2", 6, true), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				return false, nil
			}
			return apierrors.IsForbidden(err) && err.Error() == want, nil
		})
		if _, err := pcs.Create(ctx, pc("d2", 6, false), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := pcs.Patch(ctx, "d2", types.MergePatchType, []byte(`{"globalDefault":true}`), metav1.PatchOptions{})
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("marking a second default: %v", err)
		}
	})

	t.Run("system namespaces", func(t *testing.T) {
		for _, ns := range []string{"default", "kube-system", "kube-public"} {
			err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			if !apierrors.IsForbidden(err) || err.Error() != `namespaces "`+ns+`" is forbidden: this namespace may not be deleted` {
				t.Fatalf("deleting %s: %v", ns, err)
			}
		}
		old, err := cs.CoreV1().Namespaces().Get(ctx, "kube-node-lease", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, "kube-node-lease", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "kube-node-lease made again", func() (bool, error) {
			ns, err := cs.CoreV1().Namespaces().Get(ctx, "kube-node-lease", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && ns.UID != old.UID && ns.DeletionTimestamp == nil, err
		})
	})

	t.Run("a removed system class comes back at start", func(t *testing.T) {
		if _, err := c.EtcdClient.Delete(ctx, "/registry/scheduling.k8s.io/priorityclasses/system-cluster-critical"); err != nil {
			t.Fatal(err)
		}
		if _, err := pcs.Get(ctx, "system-cluster-critical", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after its removal from etcd: %v", err)
		}
		c.Servers[0].Restart(t)
		got, err := c.Servers[0].Clientset(t).SchedulingV1().PriorityClasses().Get(ctx, "system-cluster-critical", metav1.GetOptions{})
		if err != nil || got.Value != 2000000000 {
			t.Fatalf("after a restart: %+v %v", got, err)
		}
	})
}
