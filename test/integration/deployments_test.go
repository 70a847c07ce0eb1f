package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/concordproject/concord/harness"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func deployment(name string, selector, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				}}},
			},
		},
	}
}

// Deployments are served as data with what Kubernetes' API server gives them: the
// defaults of apps/v1 and of the pod template, the scale subresource, and the rules of
// their selector. No controller acts on them.
func TestDeployments(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	deployments := c.Servers[0].Clientset(t).AppsV1().Deployments("default")
	app := map[string]string{"app": "web"}
	d, err := deployments.Create(ctx, deployment("web", app, app), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quarter := intstr.FromString("25%")
	pod := d.Spec.Template.Spec
	container := pod.Containers[0]
	switch {
	case ptr.Deref(d.Spec.Replicas, 0) != 1, ptr.Deref(d.Spec.RevisionHistoryLimit, 0) != 10, ptr.Deref(d.Spec.ProgressDeadlineSeconds, 0) != 600,
		d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.RollingUpdate == nil,
		*d.Spec.Strategy.RollingUpdate.MaxSurge != quarter, *d.Spec.Strategy.RollingUpdate.MaxUnavailable != quarter:
		t.Errorf("deployment defaults: %+v", d.Spec)
	case pod.RestartPolicy != corev1.RestartPolicyAlways, pod.DNSPolicy != corev1.DNSClusterFirst, pod.SchedulerName != "default-scheduler",
		ptr.Deref(pod.TerminationGracePeriodSeconds, 0) != 30, pod.SecurityContext == nil:
		t.Errorf("pod template defaults: %+v", pod)
	case container.ImagePullPolicy != corev1.PullIfNotPresent, container.TerminationMessagePath != "/dev/termination-log",
		container.TerminationMessagePolicy != corev1.TerminationMessageReadFile, container.Ports[0].Protocol != corev1.ProtocolTCP:
		t.Errorf("container defaults: %+v", container)
	case d.Generation != 1:
		t.Errorf("generation %d, want 1", d.Generation)
	}

	scale, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
		t.Fatalf("scale = %+v, %v; want 1 replica and selector app=web", scale, err)
	}
	scale.Spec.Replicas = 4
	if _, err := deployments.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, err = deployments.Get(ctx, "web", metav1.GetOptions{}); err != nil || ptr.Deref(d.Spec.Replicas, 0) != 4 || d.Generation != 2 {
		t.Fatalf("after scaling: %v, %+v", err, d)
	}

	mismatched := deployment("mismatched", app, map[string]string{"app": "db"})
	if _, err := deployments.Create(ctx, mismatched, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !hasCause(err, "spec.template.metadata.labels", "does not match") {
		t.Errorf("selector that does not select the template: got %v, want 422", err)
	}
	noSelector := deployment("unselected", nil, app)
	noSelector.Spec.Selector = nil
	if _, err := deployments.Create(ctx, noSelector, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !hasCause(err, "spec.selector", "") {
		t.Errorf("no selector: got %v, want 422", err)
	}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}
	d.Spec.Template.Labels = map[string]string{"app": "web", "tier": "front"}
	if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !hasCause(err, "spec.selector", "immutable") {
		t.Errorf("changed selector: got %v, want 422 field is immutable", err)
	}
}

// PodTemplates are data with the pod-spec defaults, listed in pages like any resource.
func TestPodTemplates(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	templates := c.Servers[0].Clientset(t).CoreV1().PodTemplates("default")
	for i := range 5 {
		pt := &corev1.PodTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("template-%d", i)},
			Template:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:latest"}}}},
		}
		created, err := templates.Create(ctx, pt, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec := created.Template.Spec
		if spec.RestartPolicy != corev1.RestartPolicyAlways || spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
			t.Fatalf("pod spec defaults: %+v", spec)
		}
	}
	first, err := templates.List(ctx, metav1.ListOptions{Limit: 3})
	if err != nil || len(first.Items) != 3 || first.Continue == "" || ptr.Deref(first.RemainingItemCount, 0) != 2 {
		t.Fatalf("first page: %v, %d items, continue %q, remaining %v", err, len(first.Items), first.Continue, first.RemainingItemCount)
	}
	rest, err := templates.List(ctx, metav1.ListOptions{Limit: 3, Continue: first.Continue})
	if err != nil || len(rest.Items) != 2 || rest.Continue != "" || rest.ResourceVersion != first.ResourceVersion {
		t.Fatalf("second page: %v, %d items, continue %q, resourceVersion %s (first %s)", err, len(rest.Items), rest.Continue, rest.ResourceVersion, first.ResourceVersion)
	}
}

// ReplicaSets are data like Deployments: the apps/v1 and pod template defaults, the
// scale subresource, the selector rules, and kubectl's columns. No controller creates
// their pods.
func TestReplicaSets(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	replicaSets := c.Servers[0].Clientset(t).AppsV1().ReplicaSets("default")
	app := map[string]string{"app": "web"}
	template := deployment("web", app, app).Spec.Template
	rs, err := replicaSets.Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: app}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(rs.Spec.Replicas, 0) != 1 || rs.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		rs.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("defaults: %+v", rs.Spec)
	}
	scale, err := replicaSets.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
		t.Fatalf("scale = %+v, %v; want 1 replica and selector app=web", scale, err)
	}
	scale.Spec.Replicas = 3
	if _, err := replicaSets.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if rs, err = replicaSets.Get(ctx, "web", metav1.GetOptions{}); err != nil || ptr.Deref(rs.Spec.Replicas, 0) != 3 {
		t.Fatalf("after scaling: %v, %+v", err, rs)
	}
	mismatched := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "mismatched"}, Spec: appsv1.ReplicaSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template,
	}}
	if _, err := replicaSets.Create(ctx, mismatched, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !hasCause(err, "spec.template.metadata.labels", "does not match") {
		t.Errorf("selector that does not select the template: got %v, want 422", err)
	}
	rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}
	rs.Spec.Template.Labels = map[string]string{"app": "web", "tier": "front"}
	if _, err := replicaSets.Update(ctx, rs, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !hasCause(err, "spec.selector", "immutable") {
		t.Errorf("changed selector: got %v, want 422 field is immutable", err)
	}
	kubectl := kubectlOrSkip(t, c.Servers[0])
	if out, err := kubectl("get", "rs", "web"); err != nil || !strings.Contains(out, "DESIRED") || !strings.Contains(out, "web") {
		t.Errorf("kubectl get rs: %v\n%s", err, out)
	}
}
