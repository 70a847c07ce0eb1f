package integration

import (
	"crypto/x509/pkix"
	"slices"
	"strings"
	"testing"

	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"

	"github.com/concordproject/concord/harness"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

func job(name string, labels map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: "work", Image: "busybox:1.36", Command: []string{"true"},
			}}},
		}},
	}
}

// Jobs are served as data with what Kubernetes' API server gives them: batch/v1's
// defaults, a selector generated from the Job's uid with the labels that match it on
// the template, the selector's rules, and batch/v1's legacy garbage collection default
// (orphan). No controller runs their pods.
func batchJobs(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	cs := c.Servers[0].Clientset(t)
	jobs := cs.BatchV1().Jobs(ns)
	app := map[string]string{"app": "batch"}
	j, err := jobs.Create(ctx, job("work", app), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(j.UID)
	wantTemplate := map[string]string{"app": "batch", "batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
		"batch.kubernetes.io/job-name": "work", "job-name": "work"}
	switch s := j.Spec; {
	case ptr.Deref(s.Completions, 0) != 1, ptr.Deref(s.Parallelism, 0) != 1, ptr.Deref(s.BackoffLimit, 0) != 6,
		ptr.Deref(s.CompletionMode, "") != batchv1.NonIndexedCompletion, ptr.Deref(s.Suspend, true),
		ptr.Deref(s.PodReplacementPolicy, "") != batchv1.TerminatingOrFailed:
		t.Errorf("job defaults: %+v", s)
	case s.Selector == nil || !labels.Equals(s.Selector.MatchLabels, map[string]string{"batch.kubernetes.io/controller-uid": uid}):
		t.Errorf("generated selector: %+v", s.Selector)
	case !labels.Equals(s.Template.Labels, wantTemplate):
		t.Errorf("template labels: %v, want %v", s.Template.Labels, wantTemplate)
	case !labels.Equals(j.Labels, app):
		t.Errorf("job labels: %v, want the template's as written", j.Labels)
	case s.Template.Spec.DNSPolicy != corev1.DNSClusterFirst || s.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent:
		t.Errorf("pod template defaults: %+v", s.Template.Spec)
	}

	// A selector chosen by hand must select the template; no selector may change.
	manual := job("manual", app)
	manual.Spec.ManualSelector = ptr.To(true)
	manual.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	if _, err := jobs.Create(ctx, manual, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a manual selector that misses the template: %v, want 422", err)
	}
	j.Spec.Selector.MatchLabels["extra"] = "x"
	j.Spec.Template.Labels["extra"] = "x"
	if _, err := jobs.Update(ctx, j, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing a job's selector: %v, want 422", err)
	}

	checkJobUpdates(t, jobs, app)

	// Deleted through batch/v1 without a policy, a Job orphans its dependents; with
	// Background they go.
	for _, policy := range []*metav1.DeletionPropagation{nil, ptr.To(metav1.DeletePropagationBackground)} {
		name := "owned-" + strings.ToLower(string(ptr.Deref(policy, "default")))
		owner, err := jobs.Create(ctx, job(name, app), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dep := createCM(t, cs, gcCM(ns, name+"-dep", []metav1.OwnerReference{ownedBy(owner, "batch/v1", "Job", false)}))
		if err := jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: policy}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, name+" deleted", func() (bool, error) {
			_, err := jobs.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if policy != nil {
			waitCMsGone(t, cs, dep)
			continue
		}
		waitFor(t, name+"'s dependent orphaned", func() (bool, error) {
			return !namesOwner(getCM(t, cs, ns, dep.Name), owner.UID), nil
		})
	}
}

// checkJobUpdates checks Kubernetes' rules for updates of a Job's spec: a typed
// client's read-modify-write of a mutable field passes; the pod template is
// immutable but for the scheduling directives and container resources of a suspended
// Job that never started;
// completions changes only with parallelism, and only for an Indexed Job.
func checkJobUpdates(t *testing.T, jobs batchv1client.JobInterface, app map[string]string) {
	t.Helper()
	ctx := t.Context()
	update := func(name string, change func(*batchv1.Job)) error {
		t.Helper()
		_, err := updateRetrying(ctx, jobs.Get, jobs.Update, name, change)
		return err
	}
	wantImmutable := func(what string, err error, field, message string) {
		t.Helper()
		if !apierrors.IsInvalid(err) || !hasCause(err, field, message) {
			t.Errorf("%s: %v %q, want 422 at %s: %s", what, err, statusCauses(err), field, message)
		}
	}
	running := job("running", app)
	if _, err := jobs.Create(ctx, running, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := update("running", func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](2); j.Spec.Suspend = ptr.To(true) }); err != nil {
		t.Errorf("a typed client changing backoffLimit and suspend: %v", err)
	}
	err := update("running", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "busybox:1.37" })
	// Suspended with no active Pods, the Job may change its containers' resources
	// only: kube checks the rest of the Pod spec.
	wantImmutable("changing the image", err, "spec.template.spec", "field is immutable")
	err = update("running", func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](3) })
	wantImmutable("changing completions of a NonIndexed Job", err, "spec.completions", "field is immutable")
	err = update("running", func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) })
	wantImmutable("changing completionMode", err, "spec.completionMode", "field is immutable")

	// Suspended and never started: the scheduling directives may change, not the rest.
	suspended := job("suspended", app)
	suspended.Spec.Suspend = ptr.To(true)
	if _, err := jobs.Create(ctx, suspended, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	schedule := func(j *batchv1.Job) {
		j.Spec.Template.Labels["queue"] = "gpu"
		j.Spec.Template.Annotations = map[string]string{"note": "x"}
		j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
		j.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
		j.Spec.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
		j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
	}
	if err := update("suspended", schedule); err != nil {
		t.Errorf("scheduling directives of a suspended Job that never started: %v", err)
	}
	err = update("suspended", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "busybox:1.37" })
	wantImmutable("the image of a suspended Job", err, "spec.template.spec", "field is immutable")
	j, err := jobs.Get(ctx, "suspended", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j.Status.StartTime = &metav1.Time{Time: j.CreationTimestamp.Time}
	if _, err := jobs.UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = update("suspended", func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "b"} })
	wantImmutable("the node selector of a Job that started", err, "spec.template", "field is immutable")

	// Indexed: completions changes in tandem with parallelism.
	indexed := job("indexed", app)
	indexed.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	indexed.Spec.Completions, indexed.Spec.Parallelism = ptr.To[int32](2), ptr.To[int32](2)
	if _, err := jobs.Create(ctx, indexed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := update("indexed", func(j *batchv1.Job) { j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](4) }); err != nil {
		t.Errorf("scaling an Indexed Job: %v", err)
	}
	err = update("indexed", func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](5) })
	wantImmutable("completions alone of an Indexed Job", err, "spec.completions", "can only be modified in tandem with spec.parallelism")
}

// CertificateSigningRequests record who asked, whatever the client wrote, keep their
// spec, and must hold a certificate request; PodDisruptionBudgets, CSINodes,
// RuntimeClasses and Ingresses are stored as written; HorizontalPodAutoscalers,
// PodDisruptionBudgets and CronJobs get Kubernetes' defaults and validation
// (checkKubeValidation). Nothing acts on any of them.
func TestDataResources(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	cfg := rest.CopyConfig(c.Servers[0].Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", UID: "alice-uid", Groups: []string{"system:masters", "devs"}}
	alice := kubernetes.NewForConfigOrDie(cfg)
	csrs := alice.CertificatesV1().CertificateSigningRequests()
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: certificateRequest(t, pkix.Name{CommonName: "alice"}), SignerName: "example.com/signer",
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, Username: "mallory",
		},
	}
	got, err := csrs.Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Username != "alice" || got.Spec.UID != "alice-uid" || !slices.Contains(got.Spec.Groups, "devs") {
		t.Errorf("requester: %q %q %v, want alice's", got.Spec.Username, got.Spec.UID, got.Spec.Groups)
	}
	got.Spec.SignerName = "example.com/other"
	if got, err = csrs.Update(ctx, got, metav1.UpdateOptions{}); err != nil || got.Spec.SignerName != "example.com/signer" {
		t.Errorf("an update of spec: %v, signer %q, want it kept", err, got.Spec.SignerName)
	}
	bad := csr.DeepCopy()
	bad.Name, bad.Spec.Request = "bad", []byte("not a request")
	if _, err := csrs.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a request that is no PEM certificate request: %v, want 422", err)
	}

	cs := c.Servers[0].Clientset(t)
	one := intstr.FromInt32(1)
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Errorf("pod disruption budget: %v", err)
	}
	checkKubeValidation(t, cs)
	if _, err := cs.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "csi.example.com", NodeID: "n1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Errorf("csinode: %v", err)
	}
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}, metav1.CreateOptions{}); err != nil {
		t.Errorf("runtime class: %v", err)
	}
	pathType := networkingv1.PathTypePrefix
	ing, err := cs.NetworkingV1().Ingresses("default").Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "example.com", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}},
			}}}},
		}}}},
	}, metav1.CreateOptions{})
	if err != nil || ing.Spec.Rules[0].Host != "example.com" {
		t.Errorf("ingress: %v", err)
	}
}

// checkKubeValidation checks that HorizontalPodAutoscalers, PodDisruptionBudgets and
// CronJobs get Kubernetes' defaults, generation and errors through the API.
func checkKubeValidation(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	hpas := cs.AutoscalingV2().HorizontalPodAutoscalers("default")
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 3,
	}}
	got, err := hpas.Create(ctx, hpa, metav1.CreateOptions{})
	if err != nil || ptr.Deref(got.Spec.MinReplicas, 0) != 1 || got.Generation != 1 || len(got.Spec.Metrics) != 1 {
		t.Errorf("an autoscaler: %v, minReplicas %v, generation %d, metrics %+v", err, got.Spec.MinReplicas, got.Generation, got.Spec.Metrics)
	}
	hpa.Name, hpa.Spec.MaxReplicas = "none", 0
	if _, err := hpas.Create(ctx, hpa, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !hasCause(err, "spec.maxReplicas", "") {
		t.Errorf("an autoscaler of no replicas: %v %q, want 422 at spec.maxReplicas", err, statusCauses(err))
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "both"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &one, MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !hasCause(err, "spec", "minAvailable and maxUnavailable cannot be both set") {
		t.Errorf("a budget of both minAvailable and maxUnavailable: %v %q, want 422 at spec", err, statusCauses(err))
	}
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: batchv1.CronJobSpec{Schedule: "every day", JobTemplate: batchv1.JobTemplateSpec{Spec: job("x", nil).Spec}}}
	if _, err := cs.BatchV1().CronJobs("default").Create(ctx, cj, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !hasCause(err, "spec.schedule", "expected exactly 5 fields") {
		t.Errorf("a CronJob of a bad schedule: %v %q, want 422 at spec.schedule", err, statusCauses(err))
	}
}
