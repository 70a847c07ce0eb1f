package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/identity"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// quotaEnv is a namespace of a cluster with one quota in it.
type quotaEnv struct {
	t      *testing.T
	ns     string
	name   string
	client kubernetes.Interface
}

// newQuotaEnv creates namespace ns and the quota name with hard limits hard.
func newQuotaEnv(t *testing.T, s *harness.Server, ns, name string, hard map[string]string) *quotaEnv {
	t.Helper()
	e := &quotaEnv{t: t, ns: ns, name: name, client: s.Clientset(t)}
	if _, err := e.client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}}}
	for k, v := range hard {
		rq.Spec.Hard[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	if _, err := e.client.CoreV1().ResourceQuotas(ns).Create(t.Context(), rq, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// waitUsed waits until the quota's status.used has want for every name of want, and
// status.hard mirrors spec.hard.
func (e *quotaEnv) waitUsed(want map[string]string) {
	e.t.Helper()
	waitFor(e.t, fmt.Sprintf("quota %s/%s to use %v", e.ns, e.name, want), func() (bool, error) {
		rq, err := e.client.CoreV1().ResourceQuotas(e.ns).Get(e.t.Context(), e.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for k, v := range rq.Spec.Hard {
			if got, ok := rq.Status.Hard[k]; !ok || got.Cmp(v) != 0 {
				return false, nil
			}
		}
		for k, v := range want {
			got, ok := rq.Status.Used[corev1.ResourceName(k)]
			if !ok || got.Cmp(resource.MustParse(v)) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

func (e *quotaEnv) configMap(client kubernetes.Interface, name string, opts metav1.CreateOptions) error {
	_, err := client.CoreV1().ConfigMaps(e.ns).Create(e.t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, opts)
	return err
}

// waitEnforced waits until server s enforces the quota as last written: the quota
// forbids PodTemplates (count/podtemplates: 0), so a dry-run PodTemplate refused by s
// shows that s's admission has read the status that limits them, and with it every
// earlier write of the quota (its informer sees writes in order).
func (e *quotaEnv) waitEnforced(s *harness.Server) {
	e.t.Helper()
	client := s.Clientset(e.t)
	waitFor(e.t, fmt.Sprintf("server %d to enforce quota %s/%s", s.Index, e.ns, e.name), func() (bool, error) {
		pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "probe"}}}}}
		_, err := client.CoreV1().PodTemplates(e.ns).Create(e.t.Context(), pt, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !apierrors.IsForbidden(err) {
			return false, nil
		}
		return strings.Contains(err.Error(), "exceeded quota: "+e.name), nil
	})
}

// mustExceed fails unless create ends in the 403 of a write that would exceed the
// quota. A server whose informer has not yet seen the latest charge tries to charge
// over it and meets a conflict (409: the quota's optimistic concurrency refuses the
// stale charge, so nothing is admitted): create is tried again then; it must never
// succeed.
func mustExceed(t *testing.T, what string, create func() error) {
	t.Helper()
	waitFor(t, what+" refused", func() (bool, error) {
		err := create()
		if apierrors.IsConflict(err) {
			return false, nil
		}
		var status apierrors.APIStatus
		if !errorsAs(err, &status) || status.Status().Code != 403 || status.Status().Reason != metav1.StatusReasonForbidden ||
			!strings.Contains(status.Status().Message, "exceeded quota") {
			t.Fatalf("%s: got %v, want a 403 Forbidden Status saying the quota is exceeded", what, err)
		}
		return true, nil
	})
}

// mustAdmit waits until create succeeds: a server admits it once its informer has
// seen usage given back (until then it is refused as exceeding the quota).
func mustAdmit(t *testing.T, what string, create func() error) {
	t.Helper()
	waitFor(t, what+" admitted", func() (bool, error) {
		err := create()
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota") {
			return false, nil
		}
		return err == nil, err
	})
}

// ResourceQuotas through two servers: the usage controller (one leader) fills status
// (hard mirrors spec, used counts the namespace's objects); admission on every server
// charges creations and refuses those beyond the quota with 403, dry runs included
// but never charged; deletions give usage back; a quota's status.hard tampered with is
// reset; invalid quotas are refused with 422; kubectl prints REQUEST and LIMIT.
func resourceQuota(t *testing.T, c *harness.Cluster, ns string) {
	a, b := c.Servers[0], c.Servers[1]
	ctx := t.Context()
	e := newQuotaEnv(t, a, "quota-cm", "q", map[string]string{"configmaps": "2", "count/podtemplates": "0", "cpu": "1", "limits.memory": "1Gi"})
	e.waitUsed(map[string]string{"configmaps": "0"})
	// Until a server has read a quota's calculated status, the quota does not limit
	// what it admits (as in Kubernetes): wait for the servers the test writes through.
	e.waitEnforced(a)
	e.waitEnforced(b)

	clientB := b.Clientset(t)
	if err := e.configMap(clientB, "dry", metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "two"} {
		if err := e.configMap(clientB, name, metav1.CreateOptions{}); err != nil {
			t.Fatalf("configmap %s within the quota: %v", name, err)
		}
	}
	e.waitUsed(map[string]string{"configmaps": "2"}) // the dry run was not charged
	mustExceed(t, "a third configmap", func() error { return e.configMap(e.client, "three", metav1.CreateOptions{}) })
	mustExceed(t, "a third configmap by server-side apply", func() error {
		_, err := clientB.CoreV1().ConfigMaps(e.ns).Apply(ctx, corev1apply.ConfigMap("applied", e.ns), metav1.ApplyOptions{FieldManager: "quota-test"})
		return err
	})
	mustExceed(t, "a third configmap, dry run", func() error {
		return e.configMap(clientB, "three", metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	})
	// Objects of other namespaces, and updates, are not limited by it.
	if _, err := clientB.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clientB.CoreV1().ConfigMaps(e.ns).Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one"}, Data: map[string]string{"k": "v"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("an update within a full quota: %v", err)
	}

	if err := e.client.CoreV1().ConfigMaps(e.ns).Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitUsed(map[string]string{"configmaps": "1"})
	mustAdmit(t, "a configmap after one was deleted", func() error { return e.configMap(clientB, "three", metav1.CreateOptions{}) })

	// status.hard is the controller's: a write to it is undone.
	patch := []byte(`{"status":{"hard":{"configmaps":"9"}}}`)
	if _, err := e.client.CoreV1().ResourceQuotas(e.ns).Patch(ctx, "q", types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	e.waitUsed(map[string]string{"configmaps": "2"})

	checkInvalidQuota(t, e)
	checkQuotaTable(t, a, e)
}

// checkInvalidQuota creates quotas Kubernetes refuses: each is a 422 naming the field.
func checkInvalidQuota(t *testing.T, e *quotaEnv) {
	t.Helper()
	for hard, want := range map[string]string{
		"pods=-1":           `spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0`,
		"widgets=1":         `spec.hard[widgets]: Invalid value: "widgets": must be a standard resource for quota`,
		"count/widgets=1.5": `spec.hard[count/widgets]: Invalid value: "1500m": must be an integer`,
	} {
		name, value, _ := strings.Cut(hard, "=")
		rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "invalid"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceName(name): resource.MustParse(value)}}}
		_, err := e.client.CoreV1().ResourceQuotas(e.ns).Create(t.Context(), rq, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("quota %s: got %v, want 422 with %q", hard, err, want)
		}
	}
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "invalid"}, Spec: corev1.ResourceQuotaSpec{
		Hard:          corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")},
		ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{ScopeName: "Sometimes", Operator: corev1.ScopeSelectorOpIn}}},
	}}
	_, err := e.client.CoreV1().ResourceQuotas(e.ns).Create(t.Context(), rq, metav1.CreateOptions{})
	// Kubernetes' messages, which name the requirement without its index.
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.scopeSelector.matchExpressions.scopeName: Invalid value: "Sometimes": unsupported scope`) ||
		!strings.Contains(err.Error(), "spec.scopeSelector.matchExpressions.values: Required value") {
		t.Errorf("quota with a bad scope selector: got %v", err)
	}
}

// checkQuotaTable checks kubectl's view of the quota.
func checkQuotaTable(t *testing.T, s *harness.Server, e *quotaEnv) {
	t.Helper()
	kubectl := kubectlOrSkip(t, s)
	out, err := kubectl("get", "quota", "-n", e.ns)
	if err != nil {
		t.Fatalf("kubectl get quota: %v: %s", err, out)
	}
	for _, want := range []string{"REQUEST", "LIMIT", "configmaps: 2/2, count/podtemplates: 0/0, cpu: 0/1", "limits.memory: 0/1Gi"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get quota: %q lacks %q", out, want)
		}
	}
}

// Object-count quotas of custom resources (count/<plural>.<group>) are kept by the
// elected usage controller, also after the leader stops: a quota created before its
// resource is served counts it from when it is; creations beyond it are refused;
// deletions give usage back through the new leader.
func TestResourceQuotaCustomResources(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	const group = "quota.example.com"
	e := newQuotaEnv(t, c.Servers[0], "quota-cr", "widgets", map[string]string{"count/widgets." + group: "1", "count/podtemplates": "0"})
	e.waitUsed(map[string]string{"count/widgets." + group: "0"})
	e.waitEnforced(c.Servers[0])
	e.waitEnforced(c.Servers[1])
	if _, err := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(group, "v1", "v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	create := func(s *harness.Server, name string) error {
		w := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]interface{}{"name": name}}}
		_, err := s.Dynamic(t).Resource(gvr).Namespace(e.ns).Create(ctx, w, metav1.CreateOptions{})
		return err
	}
	waitFor(t, "widgets served by both servers", func() (bool, error) {
		return c.Servers[0].Registry.Get(gvr.GroupResource()) != nil && c.Servers[1].Registry.Get(gvr.GroupResource()) != nil, nil
	})
	if err := create(c.Servers[1], "first"); err != nil {
		t.Fatal(err)
	}
	e.waitUsed(map[string]string{"count/widgets." + group: "1"})
	mustExceed(t, "a second widget", func() error { return create(c.Servers[0], "second") })

	// The leader, which counted no widget before they were served, sees the deletion.
	if err := c.Servers[0].Dynamic(t).Resource(gvr).Namespace(e.ns).Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitUsed(map[string]string{"count/widgets." + group: "0"})
	mustAdmit(t, "a widget after the first was deleted", func() error { return create(c.Servers[1], "first") })
	e.waitUsed(map[string]string{"count/widgets." + group: "1"})

	// The leader stops; the other server takes over and sees the next deletion.
	leader := quotaLeader(t, c)
	c.Servers[leader].Stop(t)
	other := c.Servers[1-leader]
	if err := other.Dynamic(t).Resource(gvr).Namespace(e.ns).Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.client = other.Clientset(t)
	e.waitUsed(map[string]string{"count/widgets." + group: "0"})
	mustAdmit(t, "a widget after the new leader saw the deletion", func() error { return create(other, "second") })
}

// quotaLeader returns the index of the server that leads the usage controllers.
func quotaLeader(t *testing.T, c *harness.Cluster) int {
	t.Helper()
	lease, err := c.Servers[0].Clientset(t).CoordinationV1().Leases(identity.Namespace).Get(t.Context(), feature.ElectionLease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	for i, s := range c.Servers {
		if strings.HasPrefix(holder, s.ServerID+"_") {
			return i
		}
	}
	t.Fatalf("the election lease is held by %q, none of the servers", holder)
	return -1
}

// A creation charged to a quota and then refused by storage (the name exists) keeps
// its charge only until the next full recount, every --resource-quota-sync-period:
// a watch of the quota sees used go up by the failed creation, then back.
func TestResourceQuotaResync(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.Quota.SyncPeriod = 2 * time.Second }))
	s := c.Servers[0]
	ctx := t.Context()
	e := newQuotaEnv(t, s, "quota-resync", "q", map[string]string{"configmaps": "5", "count/podtemplates": "0"})
	e.waitUsed(map[string]string{"configmaps": "0"})
	e.waitEnforced(s)
	if err := e.configMap(e.client, "taken", metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitUsed(map[string]string{"configmaps": "1"})
	rq, err := e.client.CoreV1().ResourceQuotas(e.ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.client.CoreV1().ResourceQuotas(e.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rq.ResourceVersion, FieldSelector: "metadata.name=q"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := e.configMap(e.client, "taken", metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating an existing configmap: got %v, want AlreadyExists", err)
	}
	want := []int64{2, 1} // charged, then recounted
	timeout := time.After(20 * time.Second)
	for len(want) > 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of the quota ended")
			}
			got, isQuota := ev.Object.(*corev1.ResourceQuota)
			if ev.Type != watch.Modified || !isQuota {
				t.Fatalf("unexpected event %s %T", ev.Type, ev.Object)
			}
			used := got.Status.Used[corev1.ResourceConfigMaps]
			if used.Value() != want[0] {
				t.Fatalf("configmaps used went to %s, want %d next", used.String(), want[0])
			}
			want = want[1:]
		case <-timeout:
			t.Fatalf("timed out waiting for configmaps used to go to %v", want)
		}
	}
}

// Services are measured as Kubernetes measures them: services, services.nodeports (a
// node port per port of a NodePort or LoadBalancer Service) and
// services.loadbalancers, charged on creation and on an update that changes a
// Service's type, given back on deletion.
func resourceQuotaServices(t *testing.T, c *harness.Cluster, _ string) {
	s := c.Servers[0]
	ctx := t.Context()
	e := newQuotaEnv(t, s, "quota-svc", "q", map[string]string{"services": "3", "services.nodeports": "2", "services.loadbalancers": "1", "count/podtemplates": "0"})
	e.waitUsed(map[string]string{"services": "0", "services.nodeports": "0", "services.loadbalancers": "0"})
	e.waitEnforced(s)
	svcs := e.client.CoreV1().Services(e.ns)
	service := func(name string, typ corev1.ServiceType, ports ...int32) *corev1.Service {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Type: typ, Selector: map[string]string{"app": name}}}
		for _, p := range ports {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprint("p", p), Port: p, Protocol: corev1.ProtocolTCP})
		}
		return svc
	}
	create := func(svc *corev1.Service) error { _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); return err }
	mustAdmit(t, "a ClusterIP Service", func() error { return create(service("plain", corev1.ServiceTypeClusterIP, 80)) })
	mustAdmit(t, "a NodePort Service of two ports", func() error { return create(service("np", corev1.ServiceTypeNodePort, 80, 443)) })
	e.waitUsed(map[string]string{"services": "2", "services.nodeports": "2", "services.loadbalancers": "0"})
	mustExceed(t, "a LoadBalancer Service (a third node port)", func() error { return create(service("lb", corev1.ServiceTypeLoadBalancer, 80)) })
	lb := service("lb", corev1.ServiceTypeLoadBalancer, 80)
	lb.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
	mustAdmit(t, "a LoadBalancer Service without node ports", func() error { return create(lb) })
	mustExceed(t, "a fourth Service", func() error { return create(service("four", corev1.ServiceTypeClusterIP, 80)) })
	e.waitUsed(map[string]string{"services": "3", "services.nodeports": "2", "services.loadbalancers": "1", "count/podtemplates": "0"})

	// Changing a Service's type is measured too; a deletion gives its usage back.
	plain, err := svcs.Get(ctx, "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain.Spec.Type = corev1.ServiceTypeNodePort
	mustExceed(t, "a ClusterIP Service turned NodePort", func() error { _, err := svcs.Update(ctx, plain, metav1.UpdateOptions{}); return err })
	if err := svcs.Delete(ctx, "np", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitUsed(map[string]string{"services": "2", "services.nodeports": "0", "services.loadbalancers": "1"})
}
