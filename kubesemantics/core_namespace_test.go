package kubesemantics

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/apis/core"
)

func finalizers(t *testing.T, obj map[string]any) []string {
	t.Helper()
	fins, _, err := unstructured.NestedStringSlice(obj, "spec", "finalizers")
	if err != nil {
		t.Fatal(err)
	}
	return fins
}

func TestNamespaces(t *testing.T) {
	r := served(t, schema.GroupResource{Resource: "namespaces"})
	ns := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("team", ""),
		"spec": map[string]any{"finalizers": []any{"example.com/keep"}}, "status": map[string]any{"phase": "Terminating"}})
	if str(ns, "status", "phase") != "Active" || !slices.Equal(finalizers(t, ns.Object), []string{"example.com/keep", "kubernetes"}) {
		t.Errorf("a new namespace: phase %q, finalizers %v", str(ns, "status", "phase"), finalizers(t, ns.Object))
	}
	if ns.GetLabels()[corev1.LabelMetadataName] != "team" || ns.GetGeneration() != 0 {
		t.Errorf("labels %v, generation %d", ns.GetLabels(), ns.GetGeneration())
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("Not.A.Label", "")})
	wantErrs(t, res.errs, fieldErr{invalid, "metadata.name"})

	// The main resource keeps finalizers and status; the finalize subresource writes
	// the finalizers; the status subresource keeps the spec.
	changed := edit(ns, func(o map[string]any) {
		o["spec"] = map[string]any{"finalizers": []any{}}
		o["status"] = map[string]any{"phase": "Terminating"}
		o["metadata"].(map[string]any)["labels"].(map[string]any)["team"] = "a"
	})
	res = coreUpdate(t, r, "v1", "", changed, ns)
	if len(res.errs) > 0 || len(finalizers(t, res.obj.Object)) != 2 || str(res.obj, "status", "phase") != "Active" || res.obj.GetLabels()["team"] != "a" {
		t.Errorf("an update: %v, finalizers %v, phase %q, labels %v", res.errs, finalizers(t, res.obj.Object), str(res.obj, "status", "phase"), res.obj.GetLabels())
	}
	res = coreUpdate(t, r, "v1", finalizeSubresource, changed, ns)
	if len(res.errs) > 0 || len(finalizers(t, res.obj.Object)) != 0 || str(res.obj, "status", "phase") != "Active" {
		t.Errorf("a finalize: %v, finalizers %v, phase %q", res.errs, finalizers(t, res.obj.Object), str(res.obj, "status", "phase"))
	}
	res = coreUpdate(t, r, "v1", finalizeSubresource, edit(ns, func(o map[string]any) {
		o["spec"] = map[string]any{"finalizers": []any{"not a finalizer!"}}
	}), ns)
	wantErrs(t, res.errs, fieldErr{invalid, "spec.finalizers[0]"})
	condition := map[string]any{"type": "NamespaceDeletionContentFailure", "status": "False"}
	res = coreUpdate(t, r, "v1", "status", edit(ns, func(o map[string]any) {
		o["spec"] = map[string]any{"finalizers": []any{}}
		o["status"] = map[string]any{"phase": "Active", "conditions": []any{condition}}
	}), ns)
	if conds, _, _ := unstructured.NestedSlice(res.obj.Object, "status", "conditions"); len(res.errs) > 0 || len(finalizers(t, res.obj.Object)) != 2 || len(conds) != 1 {
		t.Errorf("a status update: %v, finalizers %v, phase %q", res.errs, finalizers(t, res.obj.Object), str(res.obj, "status", "phase"))
	}
	res = coreUpdate(t, r, "v1", "", edit(ns, func(o map[string]any) { o["metadata"].(map[string]any)["name"] = "other" }), ns)
	wantErrs(t, res.errs, fieldErr{invalid, "metadata.name"})
	res = coreUpdate(t, r, "v1", "status", changed, ns)
	wantErrs(t, res.errs, fieldErr{invalid, "status.Phase"})
}

// A namespace named from generateName gets its name label once the name is known.
func TestNamespaceNameLabel(t *testing.T) {
	ns := &core.Namespace{}
	ns.Name = "gen-x1"
	nameLabel(ns)
	if ns.Labels[corev1.LabelMetadataName] != "gen-x1" {
		t.Errorf("labels %v", ns.Labels)
	}
}

func TestResourceQuotas(t *testing.T) {
	r := served(t, schema.GroupResource{Resource: "resourcequotas"})
	q := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("q", "ns"),
		"spec":   map[string]any{"hard": map[string]any{"cpu": "1000m", "pods": int64(4), "requests.memory": "2Gi", "limits.memory": "1Gi"}},
		"status": map[string]any{"used": map[string]any{"pods": "1"}}})
	if str(q, "spec", "hard", "cpu") != "1" || str(q, "spec", "hard", "pods") != "4" || has(q, "status", "used") {
		t.Errorf("a new quota: %v", q.Object)
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("q", "ns"),
		"spec": map[string]any{"hard": map[string]any{"requests.memory": "2Gi", "limits.memory": "1Gi"}}})
	if !containsWarning(res.warnings, "ResourceQuota requests.memory (2Gi) should be less than limits.memory (1Gi)") {
		t.Errorf("warnings %v", res.warnings)
	}
	res = coreCreate(t, r, "v1", map[string]any{"metadata": meta("q", "ns"),
		"spec": map[string]any{"hard": map[string]any{"memory": "-1Gi", "gpus": "1", "secrets": "0.5"}, "scopes": []any{"BestEffort", "BestEffort", "Often"}}})
	wantErrs(t, res.errs, fieldErr{invalid, "spec.hard[memory]"}, fieldErr{invalid, "spec.hard[gpus]"}, fieldErr{invalid, "spec.hard[secrets]"},
		fieldErr{invalid, "spec.scopes"})

	withStatus := edit(q, func(o map[string]any) {
		o["spec"].(map[string]any)["hard"].(map[string]any)["pods"] = "10"
		o["status"] = map[string]any{"hard": map[string]any{"pods": "4"}, "used": map[string]any{"pods": "2"}}
	})
	res = coreUpdate(t, r, "v1", "", withStatus, q)
	if len(res.errs) > 0 || str(res.obj, "spec", "hard", "pods") != "10" || has(res.obj, "status", "used") {
		t.Errorf("an update: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "status", withStatus, q)
	if len(res.errs) > 0 || str(res.obj, "spec", "hard", "pods") != "4" || str(res.obj, "status", "used", "pods") != "2" {
		t.Errorf("a status update: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "status", edit(q, func(o map[string]any) { o["status"] = map[string]any{"used": map[string]any{"pods": "-1"}} }), q)
	wantErrs(t, res.errs, fieldErr{invalid, "status.used[pods]"})
}

func TestLimitRanges(t *testing.T) {
	r := unserved(t, "limitranges", "LimitRange", true, false)
	item := func(minCPU, maxCPU string) map[string]any {
		return map[string]any{"limits": []any{map[string]any{"type": "Container", "min": map[string]any{"cpu": minCPU}, "max": map[string]any{"cpu": maxCPU}}}}
	}
	l := coreMustCreate(t, r, "v1", map[string]any{"metadata": map[string]any{"namespace": "ns"}, "spec": item("100m", "1")})
	if len(l.GetName()) != 36 {
		t.Errorf("a LimitRange created without a name is named %q, want a UUID", l.GetName())
	}
	// The defaults of a container limit: its max, where it sets none.
	if got, _, _ := unstructured.NestedString(l.Object["spec"].(map[string]any)["limits"].([]any)[0].(map[string]any), "default", "cpu"); got != "1" {
		t.Errorf("default cpu %q, want the max", got)
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("l", "ns"), "spec": item("2", "1")})
	wantErrs(t, res.errs, fieldErr{invalid, "spec.limits[0].min[cpu]"}, fieldErr{invalid, "spec.limits[0].default[cpu]"}, fieldErr{invalid, "spec.limits[0].defaultRequest[cpu]"})
	res = coreUpdate(t, r, "v1", "", edit(l, func(o map[string]any) { o["spec"] = item("2", "1") }), l)
	if len(res.errs) == 0 {
		t.Error("an update with min above max was taken")
	}
}
