package kubesemantics

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/apis/core"
)

func container(name, image string, resources map[string]any) map[string]any {
	c := map[string]any{"name": name, "image": image}
	if resources != nil {
		c["resources"] = resources
	}
	return c
}

func podSpec(containers ...any) map[string]any { return map[string]any{"containers": containers} }

// containerAt returns the i-th container of obj's spec.
func containerAt(t *testing.T, obj *unstructured.Unstructured, i int) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "containers")
	if len(cs) <= i {
		t.Fatalf("no container %d in %v", i, obj.Object["spec"])
	}
	return cs[i].(map[string]any)
}

func TestPods(t *testing.T) {
	r := unserved(t, "pods", "Pod", true, true)
	spec := podSpec(container("c", "nginx", nil))
	spec["schedulingGates"] = []any{map[string]any{"name": "example.com/gate"}}
	p := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("p", "ns"), "spec": spec, "status": map[string]any{"phase": "Running"}})
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	if p.GetGeneration() != 1 || str(p, "status", "phase") != "Pending" || str(p, "status", "qosClass") != "BestEffort" ||
		len(conds) != 1 || conds[0].(map[string]any)["reason"] != "SchedulingGated" {
		t.Errorf("a new Pod: generation %d, status %v", p.GetGeneration(), p.Object["status"])
	}
	if str(p, "spec", "restartPolicy") != "Always" || containerAt(t, p, 0)["imagePullPolicy"] != "Always" {
		t.Errorf("defaults: %v", p.Object["spec"])
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("p", "ns"), "spec": podSpec(container("c", "", nil), container("c", "x", nil))})
	wantErrs(t, res.errs, fieldErr{required, "spec.containers[0].image"}, fieldErr{duplicate, "spec.containers[1].name"})
	res = coreCreate(t, r, "v1", map[string]any{"metadata": meta("p.q", "ns"), "spec": podSpec(container("c", "nginx", nil))})
	if len(res.errs) > 0 || !containsWarning(res.warnings, "metadata.name: this is used in the Pod's hostname") {
		t.Errorf("errors %v, warnings %v", res.errs, res.warnings)
	}

	res = coreUpdate(t, r, "v1", "", edit(p, func(o map[string]any) {
		o["spec"].(map[string]any)["activeDeadlineSeconds"] = int64(60)
		o["status"] = map[string]any{"phase": "Failed"}
	}), p)
	if len(res.errs) > 0 || res.obj.GetGeneration() != 2 || str(res.obj, "status", "phase") != "Pending" {
		t.Errorf("an update of the spec: %v, generation %d, status %v", res.errs, res.obj.GetGeneration(), res.obj.Object["status"])
	}
	res = coreUpdate(t, r, "v1", "", edit(p, func(o map[string]any) { o["spec"].(map[string]any)["restartPolicy"] = "Never" }), p)
	wantErrs(t, res.errs, fieldErr{forbidden, "spec"})
	res = coreUpdate(t, r, "v1", "", edit(p, func(o map[string]any) { o["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b"} }), p)
	if len(res.errs) > 0 || res.obj.GetGeneration() != 1 {
		t.Errorf("an update of the labels: %v, generation %d", res.errs, res.obj.GetGeneration())
	}
}

func TestPodStatus(t *testing.T) {
	r := unserved(t, "pods", "Pod", true, true)
	owner := []any{map[string]any{"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "1", "controller": true}}
	p := coreMustCreate(t, r, "v1", map[string]any{"metadata": map[string]any{"name": "p", "namespace": "ns", "ownerReferences": owner},
		"spec": podSpec(container("c", "nginx", nil))})
	p.Object["status"].(map[string]any)["observedGeneration"] = int64(1)
	res := coreUpdate(t, r, "v1", "status", edit(p, func(o map[string]any) {
		o["status"] = map[string]any{"phase": "Running", "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
		o["spec"].(map[string]any)["activeDeadlineSeconds"] = int64(60)
		delete(o["metadata"].(map[string]any), "ownerReferences")
	}), p)
	if len(res.errs) > 0 || str(res.obj, "status", "phase") != "Running" || str(res.obj, "status", "qosClass") != "BestEffort" ||
		has(res.obj, "spec", "activeDeadlineSeconds") || len(res.obj.GetOwnerReferences()) != 1 || res.obj.GetGeneration() != 1 {
		t.Errorf("a status update: %v, %v", res.errs, res.obj.Object)
	}
	if g, _, _ := unstructured.NestedInt64(res.obj.Object, "status", "observedGeneration"); g != 1 {
		t.Errorf("observedGeneration %d, want the old one kept", g)
	}
	res = coreUpdate(t, r, "v1", "status", edit(p, func(o map[string]any) {
		o["status"] = map[string]any{"podIPs": []any{map[string]any{"ip": "not-an-ip"}}}
	}), p)
	wantErrs(t, res.errs, fieldErr{invalid, "status.podIPs[0]"})
}

// The ephemeralcontainers and resize subresources change their part of the spec and
// nothing else.
func TestPodSubresources(t *testing.T) {
	r := unserved(t, "pods", "Pod", true, true)
	limits := map[string]any{"requests": map[string]any{"cpu": "100m"}, "limits": map[string]any{"cpu": "200m"}}
	p := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("p", "ns"), "spec": podSpec(container("c", "nginx", limits))})
	debug := map[string]any{"name": "debug", "image": "busybox"}
	res := coreUpdate(t, r, "v1", "ephemeralcontainers", edit(p, func(o map[string]any) {
		o["spec"].(map[string]any)["ephemeralContainers"] = []any{debug}
		o["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = "nginx:2"
		o["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b"}
	}), p)
	if eph, _, _ := unstructured.NestedSlice(res.obj.Object, "spec", "ephemeralContainers"); len(res.errs) > 0 || len(eph) != 1 ||
		containerAt(t, res.obj, 0)["image"] != "nginx" || len(res.obj.GetLabels()) != 0 || res.obj.GetGeneration() != 2 {
		t.Errorf("ephemeral containers: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "ephemeralcontainers", edit(p, func(o map[string]any) {
		o["spec"].(map[string]any)["ephemeralContainers"] = []any{map[string]any{"name": "debug"}}
	}), p)
	wantErrs(t, res.errs, fieldErr{required, "spec.ephemeralContainers[0].image"})

	res = coreUpdate(t, r, "v1", "resize", edit(p, func(o map[string]any) {
		c := o["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["resources"] = map[string]any{"requests": map[string]any{"cpu": "150m"}, "limits": map[string]any{"cpu": "200m"}}
		c["image"] = "nginx:2"
	}), p)
	c := containerAt(t, res.obj, 0)
	if len(res.errs) > 0 || c["image"] != "nginx" || c["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] != "150m" || res.obj.GetGeneration() != 2 {
		t.Errorf("a resize: %v, %v", res.errs, c)
	}
	res = coreUpdate(t, r, "v1", "resize", edit(p, func(o map[string]any) {
		c := o["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["resources"] = map[string]any{}
	}), p)
	if len(res.errs) == 0 {
		t.Error("a resize that changes the QoS class was taken")
	}
}

// resizedContainers takes only resources and resize policies, unless containers were
// renamed or reordered (validation refuses those).
func TestResizedContainers(t *testing.T) {
	old := []core.Container{{Name: "a", Image: "1"}, {Name: "b", Image: "2"}}
	policy := []core.ContainerResizePolicy{{ResourceName: core.ResourceCPU, RestartPolicy: core.NotRequired}}
	changed := []core.Container{{Name: "a", Image: "9", ResizePolicy: policy}, {Name: "b", Image: "9"}}
	got := resizedContainers(changed, old)
	if got[0].Image != "1" || got[1].Image != "2" || len(got[0].ResizePolicy) != 1 {
		t.Errorf("resized: %+v", got)
	}
	reordered := []core.Container{{Name: "b"}, {Name: "a"}}
	if got := resizedContainers(reordered, old); got[0].Name != "b" {
		t.Errorf("reordered containers: %+v, want them as sent", got)
	}
}

// Affinity terms and spread constraints get the requirements of their label keys.
func TestMergeLabelKeys(t *testing.T) {
	sel := func() *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}} }
	term := core.PodAffinityTerm{LabelSelector: sel(), TopologyKey: "zone", MatchLabelKeys: []string{"rev", "missing"}, MismatchLabelKeys: []string{"team"}}
	p := &core.Pod{Spec: core.PodSpec{
		Affinity: &core.Affinity{PodAntiAffinity: &core.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  []core.PodAffinityTerm{term},
			PreferredDuringSchedulingIgnoredDuringExecution: []core.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: core.PodAffinityTerm{TopologyKey: "zone", MatchLabelKeys: []string{"rev"}}}},
		}},
		TopologySpreadConstraints: []core.TopologySpreadConstraint{{LabelSelector: sel(), MatchLabelKeys: []string{"rev"}}},
	}}
	p.Labels = map[string]string{"rev": "7", "team": "blue"}
	testSemanticsDo(t, func() { mergeAffinityLabelKeys(p); mergeSpreadLabelKeys(p) })
	got := p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchExpressions
	want := []metav1.LabelSelectorRequirement{{Key: "rev", Operator: metav1.LabelSelectorOpIn, Values: []string{"7"}}, {Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"blue"}}}
	if !slices.EqualFunc(got, want, func(a, b metav1.LabelSelectorRequirement) bool {
		return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
	}) {
		t.Errorf("affinity requirements %v, want %v", got, want)
	}
	if p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector != nil {
		t.Error("a term without a selector got one")
	}
	if exprs := p.Spec.TopologySpreadConstraints[0].LabelSelector.MatchExpressions; len(exprs) != 1 || exprs[0].Values[0] != "7" {
		t.Errorf("spread constraint requirements %v", exprs)
	}
}

// testSemanticsDo runs fn under the test server's gates.
func testSemanticsDo(t *testing.T, fn func()) {
	t.Helper()
	sem, err := testSemantics()
	if err != nil {
		t.Fatal(err)
	}
	sem.gates.Do(fn)
}

// A container's deprecated AppArmor annotation becomes its field, with a warning.
func TestAppArmorFieldsFromAnnotations(t *testing.T) {
	key := core.DeprecatedAppArmorAnnotationKeyPrefix
	p := &core.Pod{Spec: core.PodSpec{Containers: []core.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}}}}
	p.Annotations = map[string]string{key + "a": "runtime/default", key + "b": "bogus", key + "c": "runtime/default"}
	p.Spec.Containers[2].SecurityContext = &core.SecurityContext{AppArmorProfile: &core.AppArmorProfile{Type: core.AppArmorProfileTypeUnconfined}}
	rec := &recorder{}
	appArmorFieldsFromAnnotations(warning.WithWarningRecorder(t.Context(), rec), p)
	if sc := p.Spec.Containers[0].SecurityContext; sc == nil || sc.AppArmorProfile.Type != core.AppArmorProfileTypeRuntimeDefault {
		t.Errorf("container a: %+v", sc)
	}
	if p.Spec.Containers[1].SecurityContext != nil || p.Spec.Containers[2].SecurityContext.AppArmorProfile.Type != core.AppArmorProfileTypeUnconfined {
		t.Errorf("containers b, c: %+v, %+v", p.Spec.Containers[1].SecurityContext, p.Spec.Containers[2].SecurityContext)
	}
	if len(rec.list) != 2 || !containsWarning(rec.list, key+"a") || !containsWarning(rec.list, key+"b") {
		t.Errorf("warnings %v, want those of a and b", rec.list)
	}
}

// Conditions left without an observed generation keep the old ones', type by type.
func TestKeepObservedGenerations(t *testing.T) {
	old := &core.Pod{Status: core.PodStatus{ObservedGeneration: 3, Conditions: []core.PodCondition{
		{Type: core.PodReady, ObservedGeneration: 3}, {Type: core.PodReady, ObservedGeneration: 2}, {Type: core.PodScheduled, ObservedGeneration: 1}}}}
	p := &core.Pod{Status: core.PodStatus{Conditions: []core.PodCondition{
		{Type: core.PodScheduled}, {Type: core.PodReady, ObservedGeneration: 4}, {Type: core.PodReady}, {Type: core.ContainersReady}}}}
	keepObservedGenerations(p, old)
	var got []int64
	for _, c := range p.Status.Conditions {
		got = append(got, c.ObservedGeneration)
	}
	if p.Status.ObservedGeneration != 3 || !slices.Equal(got, []int64{1, 4, 2, 0}) {
		t.Errorf("observed generations %d, %v", p.Status.ObservedGeneration, got)
	}
}

func TestReplicationControllers(t *testing.T) {
	r := unserved(t, "replicationcontrollers", "ReplicationController", true, true)
	template := map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}}, "spec": podSpec(container("c", "nginx", nil))}
	rc := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("rc", "ns"), "spec": map[string]any{"template": template},
		"status": map[string]any{"replicas": int64(3)}})
	if rc.GetGeneration() != 1 || has(rc, "status", "replicas") && rc.Object["status"].(map[string]any)["replicas"] != int64(0) ||
		str(rc, "spec", "selector", "app") != "x" {
		t.Errorf("a new ReplicationController: %v", rc.Object)
	}
	if n, _, _ := unstructured.NestedInt64(rc.Object, "spec", "replicas"); n != 1 {
		t.Errorf("replicas %d, want the default 1", n)
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("rc", "ns"), "spec": map[string]any{"selector": map[string]any{"app": "y"}, "template": template}})
	wantErrs(t, res.errs, fieldErr{invalid, "spec.template.metadata.labels"})
	res = coreUpdate(t, r, "v1", "", edit(rc, func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = int64(2) }), rc)
	if len(res.errs) > 0 || res.obj.GetGeneration() != 2 {
		t.Errorf("an update: %v, generation %d", res.errs, res.obj.GetGeneration())
	}
	res = coreUpdate(t, r, "v1", "status", edit(rc, func(o map[string]any) {
		o["spec"].(map[string]any)["replicas"] = int64(2)
		o["status"] = map[string]any{"replicas": int64(1)}
	}), rc)
	if n, _, _ := unstructured.NestedInt64(res.obj.Object, "spec", "replicas"); len(res.errs) > 0 || n != 1 || res.obj.GetGeneration() != 1 {
		t.Errorf("a status update: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "status", edit(rc, func(o map[string]any) { o["status"] = map[string]any{"replicas": int64(-1)} }), rc)
	wantErrs(t, res.errs, fieldErr{invalid, "status.replicas"}, fieldErr{invalid, "status.fullyLabeledReplicas"},
		fieldErr{invalid, "status.readyReplicas"}, fieldErr{invalid, "status.availableReplicas"})
}

// An RC converted from a kind with a selector it cannot express keeps it.
func TestNonConvertibleRCFields(t *testing.T) {
	old := &core.ReplicationController{Spec: core.ReplicationControllerSpec{Selector: map[string]string{"a": "b"}}}
	old.Name, old.Namespace = "rc", "ns"
	old.Annotations = map[string]string{core.NonConvertibleAnnotationPrefix + "/spec.selector": "x", core.NonConvertibleAnnotationPrefix + "/spec.other": "y"}
	rc := old.DeepCopy()
	rc.Spec.Selector = map[string]string{"a": "c"}
	var nonConvertible field.ErrorList
	for _, e := range validateRCUpdate(t.Context(), rc, old) {
		if e.Detail == "cannot update non-convertible selector" || e.Detail == "unknown non-convertible field" {
			nonConvertible = append(nonConvertible, e)
		}
	}
	wantErrs(t, nonConvertible, fieldErr{invalid, "spec.selector"}, fieldErr{field.ErrorTypeNotFound, "spec.other"})
}

// Pods serve ephemeralcontainers and resize (under InPlacePodVerticalScaling, on at
// 1.37), CertificateSigningRequests approval, through one mechanism: the resource's
// Semantics list them for the server to route and discover.
func TestSemanticSubresourcesListed(t *testing.T) {
	for _, c := range []struct {
		group, plural string
		want          []string
	}{
		{"", "pods", []string{"ephemeralcontainers", "resize"}},
		{"certificates.k8s.io", "certificatesigningrequests", []string{"approval"}},
		{"", "configmaps", nil},
	} {
		if got := rigCatalog(t, nil, c.group, c.plural).r.Semantics.Subresources; !slices.Equal(got, c.want) {
			t.Errorf("%s.%s: subresources %v, want %v", c.plural, c.group, got, c.want)
		}
	}
}
