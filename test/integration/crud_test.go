package integration

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
}

func crudAcrossServers(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	a := c.Servers[0].Clientset(t).CoreV1().ConfigMaps(ns)
	b := c.Servers[1].Clientset(t).CoreV1().ConfigMaps(ns)

	created, err := a.Create(ctx, configMap("one", map[string]string{"k": "v"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("create did not fill metadata: %+v", created.ObjectMeta)
	}
	got, err := b.Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get through the other server: %v", err)
	}
	if got.Data["k"] != "v" || got.ResourceVersion != created.ResourceVersion || got.UID != created.UID {
		t.Fatalf("other server sees %+v, want the created object", got)
	}

	if _, err := a.Create(ctx, configMap("one", nil), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: got %v, want AlreadyExists", err)
	}

	got.Data["k"] = "v2"
	updated, err := b.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.ResourceVersion == got.ResourceVersion {
		t.Fatalf("update kept resourceVersion %s", updated.ResourceVersion)
	}
	stale := created.DeepCopy()
	stale.Data = map[string]string{"k": "stale"}
	if _, err := a.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update with stale resourceVersion: got %v, want Conflict", err)
	}

	// An update that changes nothing writes nothing.
	same, err := a.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("no-op update: %v", err)
	}
	if same.ResourceVersion != updated.ResourceVersion {
		t.Fatalf("no-op update moved resourceVersion %s -> %s", updated.ResourceVersion, same.ResourceVersion)
	}

	if err := b.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := a.Get(ctx, "one", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: got %v, want NotFound", err)
	}
	if err := a.Delete(ctx, "one", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: got %v, want NotFound", err)
	}
}

func generateNameDryRunAndPreconditions(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps(ns)

	gen, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create with generateName: %v", err)
	}
	if len(gen.Name) != len("gen-")+5 {
		t.Fatalf("generated name %q", gen.Name)
	}

	dry, err := cms.Create(ctx, configMap("dry", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if dry.Name != "dry" {
		t.Fatalf("dry-run create returned %q", dry.Name)
	}
	if _, err := cms.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry-run create wrote the object: %v", err)
	}
	if err := cms.Delete(ctx, gen.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run delete: %v", err)
	}
	if _, err := cms.Get(ctx, gen.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("dry-run delete deleted: %v", err)
	}
	wrongUID := types.UID("not-the-uid")
	err = cms.Delete(ctx, gen.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with wrong uid precondition: got %v, want Conflict", err)
	}
	err = cms.Delete(ctx, gen.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &gen.UID, ResourceVersion: &gen.ResourceVersion}})
	if err != nil {
		t.Fatalf("delete with matching preconditions: %v", err)
	}
}

// contended retries conflicts under heavy write contention on one object: a writer may
// lose many races in a row on a loaded machine, so it retries every 2-6 ms for up to
// 6000 attempts. (No Cap: wait.Backoff ends its steps once the duration reaches Cap.)
var contended = wait.Backoff{Steps: 6000, Duration: 2 * time.Millisecond, Factor: 1, Jitter: 2}

// Many writers on one object through three servers: every increment survives.
func TestManyWritersNoLostUpdate(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 3)
	ctx := t.Context()
	if _, err := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("default").Create(ctx, configMap("counter", map[string]string{"n": "0"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 12, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		cms := c.Servers[w%3].Clientset(t).CoreV1().ConfigMaps("default")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := retry.RetryOnConflict(contended, func() error {
					cm, err := cms.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					n, _ := strconv.Atoi(cm.Data["n"])
					cm.Data["n"] = strconv.Itoa(n + 1)
					_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer failed: %v", err)
	}
	cm, err := c.Servers[1].Clientset(t).CoreV1().ConfigMaps("default").Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["n"] != strconv.Itoa(writers*each) {
		t.Fatalf("counter = %s, want %d: updates were lost", cm.Data["n"], writers*each)
	}
}

func finalizersHoldDeletion(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps(ns)
	cm := configMap("held", nil)
	cm.Finalizers = []string{"example.com/hold"}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	got, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("object with a finalizer vanished: %v", err)
	}
	if got.DeletionTimestamp == nil {
		t.Fatal("deletionTimestamp not set")
	}
	got.Finalizers = nil
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer: got %v, want NotFound", err)
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	cs := c.Servers[0].Clientset(t)
	if _, err := cs.CoreV1().ConfigMaps("missing").Create(ctx, configMap("x", nil), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("create in a missing namespace: got %v, want NotFound", err)
	}
	namespace(t, cs, "team", nil)
	// The other server learns of the namespace at once (live lookup on a cache miss).
	other := c.Servers[1].Clientset(t)
	for i := 0; i < 5; i++ {
		if _, err := other.CoreV1().ConfigMaps("team").Create(ctx, configMap(fmt.Sprint("cm-", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create in new namespace through the other server: %v", err)
		}
	}
	// An Event written through events.k8s.io is a core Event: the namespace controller
	// deletes it once, through core.
	if _, err := cs.EventsV1().Events("team").Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev"},
		EventTime: metav1.NowMicro(), ReportingController: "example.com/test", ReportingInstance: "i-1", Action: "Test",
		Reason: "Test", Type: corev1.EventTypeNormal, Regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "team", Name: "cm-0"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Objects whose finalizer the test holds keep the namespace Terminating until the
	// test lets them go: a pod, which holds back the deletion of everything else, and a
	// ConfigMap.
	const hold = "test.concord.io/hold"
	held := configMap("held", nil)
	held.Finalizers = []string{hold}
	if _, err := cs.CoreV1().ConfigMaps("team").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	heldPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{hold}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	if _, err := cs.CoreV1().Pods("team").Create(ctx, heldPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
	if err == nil && ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("deleted namespace phase %q, want Terminating", ns.Status.Phase)
	}
	// The server that deleted it refuses at once (it reads the namespace from storage
	// until its watch has surely delivered the deletion); the other once its namespace
	// cache has the deletion (as kube-apiservers' namespace lifecycle admission, which
	// reads an informer): a late object is cleaned up by the namespace controller.
	if _, err := cs.CoreV1().ConfigMaps("team").Create(ctx, configMap("late", nil), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create in a terminating namespace through the server that deleted it: %v, want 403", err)
	}
	waitFor(t, "the other server to refuse creations in the terminating namespace", func() (bool, error) {
		late := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "late-other-"}}
		_, err := other.CoreV1().ConfigMaps("team").Create(ctx, late, metav1.CreateOptions{})
		if err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) { // not found: already gone
			return false, err
		}
		return err != nil, nil
	})
	// Pods go first: while one stays, the rest is kept, and the namespace's conditions
	// say what holds it, as Kubernetes' namespace controller writes them.
	waitNamespaceConditions(t, c, cs, "team", map[corev1.NamespaceConditionType]string{
		corev1.NamespaceContentRemaining:    "True SomeResourcesRemain Some resources are remaining: pods. has 1 resource instances",
		corev1.NamespaceFinalizersRemaining: "True SomeFinalizersRemain Some content in the namespace has finalizers remaining: test.concord.io/hold in 1 resource instances",
	})
	if cm, err := cs.CoreV1().ConfigMaps("team").Get(ctx, "cm-0", metav1.GetOptions{}); err != nil || cm.DeletionTimestamp != nil {
		t.Fatalf("a ConfigMap while a pod stays: %v, %+v; want it kept", err, cm)
	}
	if _, err := updateRetrying(ctx, cs.CoreV1().Pods("team").Get, cs.CoreV1().Pods("team").Update, "held", func(p *corev1.Pod) {
		p.Finalizers = nil
	}); err != nil {
		t.Fatalf("letting the held pod go: %v", err)
	}
	waitNamespaceConditions(t, c, cs, "team", map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "False ResourcesDiscovered All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "False ParsedGroupVersions All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "False ContentDeleted All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "True SomeResourcesRemain Some resources are remaining: configmaps. has 1 resource instances",
		corev1.NamespaceFinalizersRemaining:      "True SomeFinalizersRemain Some content in the namespace has finalizers remaining: test.concord.io/hold in 1 resource instances",
	})
	if _, err := cs.CoreV1().ConfigMaps("team").Get(ctx, "cm-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a ConfigMap once the pods are gone: %v, want NotFound", err)
	}
	if _, err := updateRetrying(ctx, cs.CoreV1().ConfigMaps("team").Get, cs.CoreV1().ConfigMaps("team").Update, "held", func(cm *corev1.ConfigMap) {
		cm.Finalizers = nil
	}); err != nil {
		t.Fatalf("letting the held object go: %v", err)
	}
	waitNamespaceGone(t, c, cs, "team")
	list, err := cs.CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("%d configmaps left in the deleted namespace", len(list.Items))
	}
	for _, get := range []func() error{
		func() error { _, err := cs.CoreV1().Events("team").Get(ctx, "ev", metav1.GetOptions{}); return err },
		func() error { _, err := cs.EventsV1().Events("team").Get(ctx, "ev", metav1.GetOptions{}); return err },
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("the Event in the deleted namespace: %v, want NotFound", err)
		}
	}
}

// An update without metadata.resourceVersion overwrites a ConfigMap, as Kubernetes
// allows for most built-in resources, and is refused as invalid for a custom resource,
// a CRD, a Lease and a PodDisruptionBudget, whose Kubernetes strategies require it.
func unconditionalUpdate(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	cs := c.Servers[0].Clientset(t)
	cms := cs.CoreV1().ConfigMaps(ns)
	created, err := cms.Create(ctx, configMap("blind", map[string]string{"k": "v"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	updated, err := cms.Update(ctx, configMap("blind", map[string]string{"k": "v2"}), metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update without resourceVersion: %v", err)
	}
	if updated.Data["k"] != "v2" || updated.UID != created.UID || rvNumber(t, updated.ResourceVersion) <= rvNumber(t, created.ResourceVersion) {
		t.Fatalf("updated = %+v, want v2 over the created object (%s at %s)", updated, created.UID, created.ResourceVersion)
	}

	refused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsInvalid(err) || !hasCause(err, "metadata.resourceVersion", "must be specified for an update") {
			t.Errorf("%s updated without resourceVersion: got %v, want 422 metadata.resourceVersion must be specified", what, err)
		}
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "held"}}
	if _, err := cs.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{})
	refused("a Lease", err)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "blind"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
	}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, pdb, metav1.UpdateOptions{})
	refused("a PodDisruptionBudget", err)

	crds := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Create(ctx, cronTabCRD("blind.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.ResourceVersion = ""
	_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
	refused("a CRD", err)
	gvr := gvrOf(crd, "v1")
	waitServedEverywhere(t, c, gvr, time.Now())
	crs := c.Servers[0].Dynamic(t).Resource(gvr).Namespace(ns)
	cr := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "blind.example.com/v1", "kind": "CronTab",
		"metadata": map[string]interface{}{"name": "nightly"},
		"spec":     map[string]interface{}{"cronSpec": "0 3 * * *"},
	}}
	if _, err := crs.Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = crs.Update(ctx, cr, metav1.UpdateOptions{})
	refused("a custom resource", err)
}
