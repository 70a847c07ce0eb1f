package kubesemantics

import (
	"testing"

	"k8s.io/kubernetes/pkg/apis/scheduling"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"
)

const priorityClassManifest = `
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
`

func TestPriorityClasses(t *testing.T) {
	g := rigCatalog(t, nil, "scheduling.k8s.io", "priorityclasses")
	pc, errs, _ := g.create("v1", priorityClassManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, pc, "metadata.generation", 1)
	rigWant(t, pc, "preemptionPolicy", "PreemptLowerPriority") // kube's default

	for name, c := range map[string]struct{ manifest, want string }{
		"too high":           {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 2000000000\n", "value: Forbidden"},
		"reserved prefix":    {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-mine}\nvalue: 10\n", "metadata.name: Forbidden"},
		"preemption policy":  {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 10\npreemptionPolicy: Sometimes\n", "preemptionPolicy: Unsupported value"},
		"system class value": {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-node-critical}\nvalue: 10\n", "metadata.name: Forbidden"},
	} {
		_, errs, _ := g.create("v1", c.manifest)
		rigWantErrs(t, name, errs, c.want)
	}
	_, errs, _ = g.create("v1", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-node-critical}\nvalue: 2000001000\n")
	rigWantErrs(t, "system class", errs)

	stored := g.mustCreate("v1", priorityClassManifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { o["value"] = int64(5) })
	rigWantErrs(t, "value change", errs, "value: Forbidden")
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { o["preemptionPolicy"] = "Never" })
	rigWantErrs(t, "policy change", errs, "preemptionPolicy: Invalid value")
	up, errs, _ := g.update("v1", "", stored, func(o map[string]any) { o["description"] = "d" })
	rigWantErrs(t, "description change", errs)
	rigWant(t, up, "metadata.generation", 1) // kube's strategy leaves it
}

const workloadManifest = `
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: train, namespace: default}
spec:
  podGroupTemplates:
  - name: workers
    schedulingPolicy: {gang: {minCount: 4}}
    preemptionPolicy: Never
`

func TestWorkloads(t *testing.T) {
	g := rigHand(t, nil, "scheduling.k8s.io", "v1beta1", "Workload", "workloads", true, false)
	w, errs, _ := g.create("v1beta1", workloadManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, w, "metadata.generation", nil)
	// PodGroupPreemptionPolicy is off at 1.37: the field is dropped.
	rigWant(t, w, "spec.podGroupTemplates", []any{map[string]any{"name": "workers", "schedulingConstraints": nil, "schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(4)}}}})

	_, errs, _ = g.create("v1beta1", `
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: train, namespace: default}
spec: {podGroupTemplates: [{name: workers, schedulingPolicy: {gang: {minCount: -1}}}]}
`)
	if len(errs) == 0 {
		t.Error("a gang of minCount -1 was accepted")
	}
	for _, e := range errs {
		if e.Field != "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount" {
			t.Errorf("error %v, want one at spec.podGroupTemplates[0].schedulingPolicy.gang.minCount", e)
		}
	}

	on := rigHand(t, rigGates(t, map[string]bool{string(features.PodGroupPreemptionPolicy): true}), "scheduling.k8s.io", "v1beta1", "Workload", "workloads", true, false)
	w, errs, _ = on.create("v1beta1", workloadManifest)
	rigWantErrs(t, "with PodGroupPreemptionPolicy", errs)
	rigWant(t, w, "spec.podGroupTemplates", []any{map[string]any{"name": "workers", "schedulingConstraints": nil, "schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(4)}}, "preemptionPolicy": "Never"}})
}

const podGroupManifest = `
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: workers, namespace: default}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
status: {conditions: [{type: Scheduled, status: "True", reason: R, message: m, lastTransitionTime: "2026-01-01T00:00:00Z"}]}
`

func TestPodGroups(t *testing.T) {
	g := rigHand(t, nil, "scheduling.k8s.io", "v1beta1", "PodGroup", "podgroups", true, true)
	pg, errs, _ := g.create("v1beta1", podGroupManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, pg, "status", map[string]any{})

	_, errs, _ = g.create("v1beta1", "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: w, namespace: default}\nspec: {schedulingPolicy: {}}\n")
	if len(errs) == 0 {
		t.Error("a PodGroup without a scheduling policy was accepted")
	}

	stored := g.mustCreate("v1beta1", podGroupManifest)
	withStatus := g.object(podGroupManifest)
	withStatus.SetResourceVersion("1")
	if err := g.r.Semantics.Default("v1beta1", withStatus); err != nil {
		t.Fatal(err)
	}
	up, errs, _ := g.update("v1beta1", "", withStatus, func(o map[string]any) { rigSet(o, "status.conditions", []any{}) })
	rigWantErrs(t, "status through the main resource", errs)
	rigWant(t, up, "status.conditions", []any{map[string]any{"type": "Scheduled", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}})
	up, errs, _ = g.update("v1beta1", "status", stored, func(o map[string]any) {
		rigSet(o, "status.conditions", []any{map[string]any{"type": "Scheduled", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}})
		rigSet(o, "metadata.labels", map[string]any{"a": "b"})
	})
	rigWantErrs(t, "status update", errs)
	rigWant(t, up, "metadata.labels", nil)
	rigWant(t, up, "status.conditions", []any{map[string]any{"type": "Scheduled", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}})
}

func TestCompositePodGroups(t *testing.T) {
	gates := rigGates(t, map[string]bool{string(features.CompositePodGroup): true})
	g := rigHand(t, gates, "scheduling.k8s.io", "v1alpha3", "CompositePodGroup", "compositepodgroups", true, true)
	const manifest = `
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {name: job, namespace: default}
spec:
  workloadRef: {workloadName: train, templateName: job}
  schedulingPolicy: {basic: {}}
  preemptionPolicy: Never
`
	c, errs, _ := g.create("v1alpha3", manifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, c, "spec.preemptionPolicy", nil) // PodGroupPreemptionPolicy is off
	stored := g.mustCreate("v1alpha3", manifest)
	up, errs, _ := g.update("v1alpha3", "status", stored, func(o map[string]any) { rigSet(o, "spec.priorityClassName", "x") })
	rigWantErrs(t, "status update", errs)
	rigWant(t, up, "spec.priorityClassName", nil)
}

// TestWorkloadFieldDrops: templates keep a disabled field their stored template
// (by position for pod group templates, by name for composite ones) already sets.
func TestWorkloadFieldDrops(t *testing.T) {
	never := ptr.To(scheduling.PreemptionPolicy("Never"))
	old := &scheduling.WorkloadSpec{
		PodGroupTemplates: []scheduling.PodGroupTemplate{{Name: "a", PreemptionPolicy: never}},
		CompositePodGroupTemplates: []scheduling.CompositePodGroupTemplate{{
			Name: "c", PreemptionPolicy: never,
			PodGroupTemplates: []scheduling.PodGroupTemplate{{Name: "x"}},
		}},
	}
	spec := &scheduling.WorkloadSpec{
		PodGroupTemplates: []scheduling.PodGroupTemplate{{Name: "a", PreemptionPolicy: never}, {Name: "b", PreemptionPolicy: never}},
		CompositePodGroupTemplates: []scheduling.CompositePodGroupTemplate{
			{Name: "d", PreemptionPolicy: never},
			{Name: "c", PreemptionPolicy: never, PodGroupTemplates: []scheduling.PodGroupTemplate{{Name: "x", PreemptionPolicy: never}}},
		},
	}
	rigGates(t, nil).Do(func() { dropWorkloadFields(spec, old) })
	if spec.PodGroupTemplates[0].PreemptionPolicy == nil || spec.PodGroupTemplates[1].PreemptionPolicy != nil {
		t.Errorf("pod group templates: %v, want the policy kept at 0 (stored) and dropped at 1", spec.PodGroupTemplates)
	}
	cpg := spec.CompositePodGroupTemplates
	if len(cpg) != 2 || cpg[0].PreemptionPolicy != nil || cpg[1].PreemptionPolicy == nil || cpg[1].PodGroupTemplates[0].PreemptionPolicy != nil {
		t.Errorf("composite templates: %+v, want d's policy dropped, c's kept, c's pod group x's dropped", cpg)
	}

	fresh := &scheduling.WorkloadSpec{CompositePodGroupTemplates: []scheduling.CompositePodGroupTemplate{{Name: "c"}}}
	rigGates(t, nil).Do(func() { dropWorkloadFields(fresh, nil) })
	if fresh.CompositePodGroupTemplates != nil {
		t.Errorf("composite templates %v kept with CompositePodGroup off", fresh.CompositePodGroupTemplates)
	}
	fresh = &scheduling.WorkloadSpec{CompositePodGroupTemplates: []scheduling.CompositePodGroupTemplate{{Name: "c", CompositePodGroupTemplates: []scheduling.CompositePodGroupTemplate{{Name: "n"}}}}}
	rigGates(t, nil).Do(func() { dropWorkloadFields(fresh, old) })
	if len(fresh.CompositePodGroupTemplates) != 1 || fresh.CompositePodGroupTemplates[0].CompositePodGroupTemplates != nil {
		t.Errorf("nested composite templates %v kept with CompositePodGroup off and none stored", fresh.CompositePodGroupTemplates)
	}
}

// TestPodGroupFieldDrops: a PodGroup's gated fields, and its claim statuses, follow
// their gates unless the stored spec uses them.
func TestPodGroupFieldDrops(t *testing.T) {
	spec := &scheduling.PodGroupSpec{
		SchedulingConstraints:       &scheduling.PodGroupSchedulingConstraints{},
		ResourceClaims:              []scheduling.PodGroupResourceClaim{{Name: "c"}},
		PreemptionPolicy:            ptr.To(scheduling.PreemptionPolicy("Never")),
		ParentCompositePodGroupName: ptr.To("p"),
	}
	kept := spec.DeepCopy()
	rigGates(t, nil).Do(func() { dropPodGroupSpecFields(spec, nil) })
	if spec.SchedulingConstraints != nil || spec.ResourceClaims != nil || spec.PreemptionPolicy != nil || spec.ParentCompositePodGroupName != nil {
		t.Errorf("gated fields kept with their gates off: %+v", spec)
	}
	again := kept.DeepCopy()
	rigGates(t, nil).Do(func() { dropPodGroupSpecFields(again, kept) })
	if again.SchedulingConstraints == nil || again.ResourceClaims == nil || again.PreemptionPolicy == nil || again.ParentCompositePodGroupName == nil {
		t.Errorf("gated fields the stored spec uses dropped: %+v", again)
	}
	on := rigGates(t, map[string]bool{string(features.TopologyAwareWorkloadScheduling): true, string(features.DRAWorkloadResourceClaims): true})
	spec = kept.DeepCopy()
	on.Do(func() { dropPodGroupSpecFields(spec, nil) })
	if spec.SchedulingConstraints == nil || spec.ResourceClaims == nil || spec.PreemptionPolicy != nil {
		t.Errorf("with two gates on: %+v, want constraints and claims kept, the policy dropped", spec)
	}

	pg := &scheduling.PodGroup{Status: scheduling.PodGroupStatus{ResourceClaimStatuses: []scheduling.PodGroupResourceClaimStatus{{Name: "c"}}}}
	rigGates(t, nil).Do(func() { podGroupKind().prepareStatus(t.Context(), pg, &scheduling.PodGroup{}) })
	if pg.Status.ResourceClaimStatuses != nil {
		t.Error("claim statuses kept with DRAWorkloadResourceClaims off and no claims")
	}
}

func TestGateOptions(t *testing.T) {
	var c map[string]bool
	rigGates(t, map[string]bool{string(features.CompositePodGroup): true}).Do(func() {
		c = gangSchedulingOptions().Options
	})
	want := map[string]bool{
		string(features.TopologyAwareWorkloadScheduling): false, string(features.DRAWorkloadResourceClaims): false,
		string(features.PodGroupPreemptionPolicy): false, string(features.CompositePodGroup): true,
	}
	if len(c) != len(want) {
		t.Fatalf("options %v, want %v", c, want)
	}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("option %s: %v, want %v", k, c[k], v)
		}
	}
}
