package kubesemantics

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/apis/scheduling"
	schedulingvalidation "k8s.io/kubernetes/pkg/apis/scheduling/validation"
	"k8s.io/kubernetes/pkg/features"

	_ "k8s.io/kubernetes/pkg/apis/scheduling/install" // scheduling's types, defaults and conversions
)

func init() { groups = append(groups, schedulingKinds) }

// schedulingKinds are the strategies of group scheduling.k8s.io.
func schedulingKinds() map[schema.GroupResource]strategy {
	group := func(r string) schema.GroupResource {
		return schema.GroupResource{Group: scheduling.GroupName, Resource: r}
	}
	return map[schema.GroupResource]strategy{
		group("priorityclasses"):    priorityClassKind().erase(),
		group("workloads"):          workloadKind().erase(),
		group("podgroups"):          podGroupKind().erase(),
		group("compositepodgroups"): compositePodGroupKind().erase(),
	}
}

// PriorityClasses: kube's strategy validates; the one-default rule is the Priority
// admission plugin's (package priorityclass), the protection of the system classes
// its REST storage's.
func priorityClassKind() kind[*scheduling.PriorityClass] {
	return kind[*scheduling.PriorityClass]{
		prepareCreate: func(_ context.Context, pc *scheduling.PriorityClass) { pc.Generation = 1 },
		validate: func(_ context.Context, pc *scheduling.PriorityClass) field.ErrorList {
			return schedulingvalidation.ValidatePriorityClass(pc)
		},
		validateUpdate: func(_ context.Context, pc, old *scheduling.PriorityClass) field.ErrorList {
			return schedulingvalidation.ValidatePriorityClassUpdate(pc, old)
		},
	}
}

func workloadKind() kind[*scheduling.Workload] {
	return kind[*scheduling.Workload]{
		prepareCreate: func(_ context.Context, w *scheduling.Workload) { dropWorkloadFields(&w.Spec, nil) },
		validate: func(_ context.Context, w *scheduling.Workload) field.ErrorList {
			return schedulingvalidation.ValidateWorkload(w)
		},
		prepareUpdate: func(_ context.Context, w, old *scheduling.Workload) { dropWorkloadFields(&w.Spec, &old.Spec) },
		validateUpdate: func(_ context.Context, w, old *scheduling.Workload) field.ErrorList {
			return schedulingvalidation.ValidateWorkloadUpdate(w, old)
		},
		declarative: func(context.Context, *scheduling.Workload, *scheduling.Workload) rest.DeclarativeValidationConfig {
			return gangSchedulingOptions()
		},
	}
}

func podGroupKind() kind[*scheduling.PodGroup] {
	return kind[*scheduling.PodGroup]{
		prepareCreate: func(_ context.Context, pg *scheduling.PodGroup) {
			pg.Status = scheduling.PodGroupStatus{}
			dropPodGroupSpecFields(&pg.Spec, nil)
		},
		validate: func(_ context.Context, pg *scheduling.PodGroup) field.ErrorList {
			return schedulingvalidation.ValidatePodGroup(pg)
		},
		prepareUpdate: func(_ context.Context, pg, old *scheduling.PodGroup) {
			pg.Status = old.Status
			dropPodGroupSpecFields(&pg.Spec, &old.Spec)
		},
		validateUpdate: func(_ context.Context, pg, old *scheduling.PodGroup) field.ErrorList {
			return schedulingvalidation.ValidatePodGroupUpdate(pg, old)
		},
		prepareStatus: func(_ context.Context, pg, old *scheduling.PodGroup) {
			pg.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&pg.ObjectMeta, &old.ObjectMeta)
			// Claim statuses belong to the spec's claims: kept while the gate is off
			// only if the spec already had claims.
			if !gateOrInUse(features.DRAWorkloadResourceClaims, len(old.Spec.ResourceClaims) > 0) {
				pg.Status.ResourceClaimStatuses = nil
			}
		},
		validateStatus: func(_ context.Context, pg, old *scheduling.PodGroup) field.ErrorList {
			return schedulingvalidation.ValidatePodGroupStatusUpdate(pg, old)
		},
		declarative: func(context.Context, *scheduling.PodGroup, *scheduling.PodGroup) rest.DeclarativeValidationConfig {
			return gangSchedulingOptions()
		},
	}
}

func compositePodGroupKind() kind[*scheduling.CompositePodGroup] {
	return kind[*scheduling.CompositePodGroup]{
		prepareCreate: func(_ context.Context, c *scheduling.CompositePodGroup) {
			c.Status = scheduling.CompositePodGroupStatus{}
			dropCompositePodGroupSpecFields(&c.Spec, nil)
		},
		validate: func(_ context.Context, c *scheduling.CompositePodGroup) field.ErrorList {
			return schedulingvalidation.ValidateCompositePodGroup(c)
		},
		prepareUpdate: func(_ context.Context, c, old *scheduling.CompositePodGroup) {
			c.Status = old.Status
			dropCompositePodGroupSpecFields(&c.Spec, &old.Spec)
		},
		validateUpdate: func(_ context.Context, c, old *scheduling.CompositePodGroup) field.ErrorList {
			return schedulingvalidation.ValidateCompositePodGroupUpdate(c, old)
		},
		prepareStatus: func(_ context.Context, c, old *scheduling.CompositePodGroup) {
			c.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&c.ObjectMeta, &old.ObjectMeta)
		},
		validateStatus: func(_ context.Context, c, old *scheduling.CompositePodGroup) field.ErrorList {
			return schedulingvalidation.ValidateCompositePodGroupStatusUpdate(c, old)
		},
		declarative: func(context.Context, *scheduling.CompositePodGroup, *scheduling.CompositePodGroup) rest.DeclarativeValidationConfig {
			return gateOptions(features.CompositePodGroup, features.PodGroupPreemptionPolicy)
		},
	}
}

// gateOrInUse reports whether a field behind gate f is kept: f is enabled, or the
// stored object (inUse) already sets it.
func gateOrInUse(f featuregate.Feature, inUse bool) bool {
	return utilfeature.DefaultFeatureGate.Enabled(f) || inUse
}

// gateOptions are declarative validation's options that say whether each of gates is
// enabled.
func gateOptions(gates ...featuregate.Feature) rest.DeclarativeValidationConfig {
	opts := make(map[string]bool, len(gates))
	for _, f := range gates {
		opts[string(f)] = utilfeature.DefaultFeatureGate.Enabled(f)
	}
	return rest.DeclarativeValidationConfig{Options: opts}
}

// gangSchedulingOptions are the declarative options of Workloads and PodGroups.
func gangSchedulingOptions() rest.DeclarativeValidationConfig {
	return gateOptions(features.TopologyAwareWorkloadScheduling, features.DRAWorkloadResourceClaims,
		features.PodGroupPreemptionPolicy, features.CompositePodGroup)
}

// dropPodGroupSpecFields clears the fields of a PodGroup's spec whose gate is off,
// unless old (nil on create) sets them.
func dropPodGroupSpecFields(spec, old *scheduling.PodGroupSpec) {
	if old == nil {
		old = &scheduling.PodGroupSpec{}
	}
	if !gateOrInUse(features.TopologyAwareWorkloadScheduling, old.SchedulingConstraints != nil) {
		spec.SchedulingConstraints = nil
	}
	if !gateOrInUse(features.DRAWorkloadResourceClaims, len(old.ResourceClaims) > 0) {
		spec.ResourceClaims = nil
	}
	if !gateOrInUse(features.PodGroupPreemptionPolicy, old.PreemptionPolicy != nil) {
		spec.PreemptionPolicy = nil
	}
	if !gateOrInUse(features.CompositePodGroup, old.ParentCompositePodGroupName != nil) {
		spec.ParentCompositePodGroupName = nil
	}
}

// dropCompositePodGroupSpecFields is dropPodGroupSpecFields for a CompositePodGroup.
func dropCompositePodGroupSpecFields(spec, old *scheduling.CompositePodGroupSpec) {
	if !gateOrInUse(features.PodGroupPreemptionPolicy, old != nil && old.PreemptionPolicy != nil) {
		spec.PreemptionPolicy = nil
	}
}

// dropWorkloadFields clears the fields of a Workload's templates whose gate is off,
// unless the stored template they update (old nil on create) sets them. Pod group
// templates are matched by position, composite ones by name.
func dropWorkloadFields(spec, old *scheduling.WorkloadSpec) {
	if old == nil {
		old = &scheduling.WorkloadSpec{}
	}
	dropPodGroupTemplateFields(spec.PodGroupTemplates, old.PodGroupTemplates)
	spec.CompositePodGroupTemplates = dropCompositeTemplates(spec.CompositePodGroupTemplates, old.CompositePodGroupTemplates)
}

// dropCompositeTemplates returns templates, nil if composite pod groups are disabled
// and old has none, else with their own disabled fields dropped.
func dropCompositeTemplates(templates, old []scheduling.CompositePodGroupTemplate) []scheduling.CompositePodGroupTemplate {
	if !gateOrInUse(features.CompositePodGroup, len(old) > 0) {
		return nil
	}
	byName := make(map[string]*scheduling.CompositePodGroupTemplate, len(old))
	for i := range old {
		byName[old[i].Name] = &old[i]
	}
	for i := range templates {
		t, was := &templates[i], byName[templates[i].Name]
		if was == nil {
			was = &scheduling.CompositePodGroupTemplate{}
		}
		if !gateOrInUse(features.PodGroupPreemptionPolicy, was.PreemptionPolicy != nil) {
			t.PreemptionPolicy = nil
		}
		t.CompositePodGroupTemplates = dropCompositeTemplates(t.CompositePodGroupTemplates, was.CompositePodGroupTemplates)
		dropPodGroupTemplateFields(t.PodGroupTemplates, was.PodGroupTemplates)
	}
	return templates
}

// dropPodGroupTemplateFields clears the disabled fields of each pod group template,
// unless the stored template at its position sets them.
func dropPodGroupTemplateFields(templates, old []scheduling.PodGroupTemplate) {
	for i := range templates {
		t, was := &templates[i], &scheduling.PodGroupTemplate{}
		if i < len(old) {
			was = &old[i]
		}
		if !gateOrInUse(features.TopologyAwareWorkloadScheduling, was.SchedulingConstraints != nil) {
			t.SchedulingConstraints = nil
		}
		if !gateOrInUse(features.DRAWorkloadResourceClaims, len(was.ResourceClaims) > 0) {
			t.ResourceClaims = nil
		}
		if !gateOrInUse(features.PodGroupPreemptionPolicy, was.PreemptionPolicy != nil) {
			t.PreemptionPolicy = nil
		}
	}
}
