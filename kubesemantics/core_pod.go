package kubesemantics

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/helper"
	"k8s.io/kubernetes/pkg/apis/core/helper/qos"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/features"
)

// corePodKinds are the strategies of Pods and ReplicationControllers. A Pod's
// ephemeralcontainers and resize subresources (the latter under
// InPlacePodVerticalScaling, as kube serves it) write its ephemeral containers and its
// containers' resources.
func corePodKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Resource: "pods"}: kind[*core.Pod]{
			binding:       true,
			prepareCreate: prepareNewPod,
			validate: func(_ context.Context, p *core.Pod) field.ErrorList {
				return corevalidation.ValidatePodCreate(p, podValidationOptions(p, nil))
			},
			warnCreate: func(ctx context.Context, p *core.Pod) []string {
				var out []string
				if msgs := utilvalidation.IsDNS1123Label(p.Name); len(msgs) > 0 {
					out = append(out, fmt.Sprintf("metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
				}
				return append(out, pod.GetWarningsForPod(ctx, p, nil)...)
			},
			prepareUpdate: preparePodUpdate,
			validateUpdate: func(_ context.Context, p, old *core.Pod) field.ErrorList {
				return corevalidation.ValidatePodUpdate(p, old, podValidationOptions(p, old))
			},
			// No warnings on updates: Pods are written often, mostly by controllers.
			prepareStatus: preparePodStatus,
			validateStatus: func(_ context.Context, p, old *core.Pod) field.ErrorList {
				return corevalidation.ValidatePodStatusUpdate(p, old, podValidationOptions(p, old))
			},
			subresources: map[string]subresource[*core.Pod]{
				"ephemeralcontainers": {prepare: prepareEphemeralContainers,
					validate: func(_ context.Context, p, old *core.Pod) field.ErrorList {
						return corevalidation.ValidatePodEphemeralContainersUpdate(p, old, podValidationOptions(p, old))
					}},
				"resize": {prepare: prepareResize, gate: features.InPlacePodVerticalScaling,
					validate: func(_ context.Context, p, old *core.Pod) field.ErrorList {
						return corevalidation.ValidatePodResize(p, old, podValidationOptions(p, old))
					}},
			},
		}.erase(),
		{Resource: "replicationcontrollers"}: kind[*core.ReplicationController]{
			prepareCreate: func(_ context.Context, rc *core.ReplicationController) {
				rc.Status, rc.Generation = core.ReplicationControllerStatus{}, 1
				pod.DropDisabledTemplateFields(rc.Spec.Template, nil)
			},
			validate: func(_ context.Context, rc *core.ReplicationController) field.ErrorList {
				return corevalidation.ValidateReplicationController(rc, pod.GetValidationOptionsFromPodTemplate(rc.Spec.Template, nil))
			},
			warnCreate: func(ctx context.Context, rc *core.ReplicationController) []string {
				return append(podNameWarnings(rc.Name), pod.GetWarningsForPodTemplate(ctx, templatePath, rc.Spec.Template, nil)...)
			},
			prepareUpdate: func(_ context.Context, rc, old *core.ReplicationController) {
				rc.Status = old.Status
				pod.DropDisabledTemplateFields(rc.Spec.Template, old.Spec.Template)
				if !apiequality.Semantic.DeepEqual(rc.Spec, old.Spec) {
					rc.Generation = old.Generation + 1
				}
			},
			validateUpdate: validateRCUpdate,
			warnUpdate: func(ctx context.Context, rc, old *core.ReplicationController) []string {
				// kube-apiserver passes the old template as the new one here, and the new
				// as the old: Concord answers as it does.
				return templateUpdateWarnings(ctx, templatePath, rc.Generation != old.Generation, old.Spec.Template, rc.Spec.Template)
			},
			prepareStatus: func(_ context.Context, rc, old *core.ReplicationController) { rc.Spec = old.Spec },
			validateStatus: func(_ context.Context, rc, old *core.ReplicationController) field.ErrorList {
				return corevalidation.ValidateReplicationControllerStatusUpdate(rc, old)
			},
		}.erase(),
	}
}

// podValidationOptions are the options of a Pod's validation (an update of old; old
// nil on creation): what its spec and metadata, and the old Pod's, allow.
func podValidationOptions(p, old *core.Pod) corevalidation.PodValidationOptions {
	var opts corevalidation.PodValidationOptions
	if old == nil {
		opts = pod.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, nil, &p.ObjectMeta, nil)
	} else {
		opts = pod.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, &old.Spec, &p.ObjectMeta, &old.ObjectMeta)
	}
	opts.ResourceIsPod = true
	return opts
}

// prepareNewPod readies a new Pod: generation 1, a Pending status (with the
// SchedulingGated condition of a gated Pod) and its QoS class, the fields of gates that
// are off dropped, the label keys of affinity terms and spread constraints merged into
// their selectors, AppArmor annotations carried into fields, pod-level resources
// defaulted.
func prepareNewPod(ctx context.Context, p *core.Pod) {
	p.Generation = 1
	p.Status = core.PodStatus{Phase: core.PodPending}
	pod.DropDisabledPodFields(p, nil)
	markSchedulingGated(p)
	mergeAffinityLabelKeys(p)
	mergeSpreadLabelKeys(p)
	appArmorFieldsFromAnnotations(ctx, p)
	pod.DefaultPodLevelResources(p)
	p.Status.QOSClass = qos.GetPodQOS(p)
}

// markSchedulingGated gives a Pod created with scheduling gates the PodScheduled
// condition that says they block it, unless it has a PodScheduled condition.
func markSchedulingGated(p *core.Pod) {
	if len(p.Spec.SchedulingGates) == 0 {
		return
	}
	for _, c := range p.Status.Conditions {
		if c.Type == core.PodScheduled {
			return
		}
	}
	pod.UpdatePodCondition(&p.Status, &core.PodCondition{
		Type: core.PodScheduled, Status: core.ConditionFalse,
		Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates",
	})
}

// mergeAffinityLabelKeys adds to the label selector of each pod (anti-)affinity term a
// requirement per matchLabelKeys key (In) and mismatchLabelKeys key (NotIn) the Pod
// has a label of, with that label's value, when MatchLabelKeysInPodAffinity is on.
func mergeAffinityLabelKeys(p *core.Pod) {
	if !utilfeature.DefaultFeatureGate.Enabled(features.MatchLabelKeysInPodAffinity) || p.Spec.Affinity == nil {
		return
	}
	var terms []*core.PodAffinityTerm
	if a := p.Spec.Affinity.PodAffinity; a != nil {
		terms = appendAffinityTerms(terms, a.PreferredDuringSchedulingIgnoredDuringExecution, a.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	if a := p.Spec.Affinity.PodAntiAffinity; a != nil {
		terms = appendAffinityTerms(terms, a.PreferredDuringSchedulingIgnoredDuringExecution, a.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	for _, t := range terms {
		if t.LabelSelector == nil { // selects nothing: nothing to narrow
			continue
		}
		addLabelRequirements(t.LabelSelector, t.MatchLabelKeys, metav1.LabelSelectorOpIn, p.Labels)
		addLabelRequirements(t.LabelSelector, t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn, p.Labels)
	}
}

// appendAffinityTerms appends pointers to the terms of preferred and required.
func appendAffinityTerms(out []*core.PodAffinityTerm, preferred []core.WeightedPodAffinityTerm, required []core.PodAffinityTerm) []*core.PodAffinityTerm {
	for i := range preferred {
		out = append(out, &preferred[i].PodAffinityTerm)
	}
	for i := range required {
		out = append(out, &required[i])
	}
	return out
}

// mergeSpreadLabelKeys adds to the label selector of each topology spread constraint
// an In requirement per matchLabelKeys key the Pod has a label of, when both
// MatchLabelKeysInPodTopologySpread and its selector merge gate are on.
func mergeSpreadLabelKeys(p *core.Pod) {
	gate := utilfeature.DefaultFeatureGate.Enabled
	if !gate(features.MatchLabelKeysInPodTopologySpread) || !gate(features.MatchLabelKeysInPodTopologySpreadSelectorMerge) {
		return
	}
	for i := range p.Spec.TopologySpreadConstraints {
		if c := &p.Spec.TopologySpreadConstraints[i]; c.LabelSelector != nil {
			addLabelRequirements(c.LabelSelector, c.MatchLabelKeys, metav1.LabelSelectorOpIn, p.Labels)
		}
	}
}

// addLabelRequirements adds to sel, for each of keys that labels has, the requirement
// "key op (its value)".
func addLabelRequirements(sel *metav1.LabelSelector, keys []string, op metav1.LabelSelectorOperator, labels map[string]string) {
	for _, k := range keys {
		if v, ok := labels[k]; ok {
			sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: []string{v}})
		}
	}
}

// appArmorFieldsFromAnnotations carries each container's deprecated AppArmor
// annotation of a non-Windows Pod into its securityContext.appArmorProfile, where the
// container sets none and the annotation's profile is valid and differs from the
// Pod's, and warns that the annotation is deprecated (unless it was carried over as the
// Pod's own profile).
func appArmorFieldsFromAnnotations(ctx context.Context, p *core.Pod) {
	if p.Spec.OS != nil && p.Spec.OS.Name == core.Windows {
		return
	}
	var podProfile *core.AppArmorProfile
	if p.Spec.SecurityContext != nil {
		podProfile = p.Spec.SecurityContext.AppArmorProfile
	}
	pod.VisitContainers(&p.Spec, pod.AllFeatureEnabledContainers(), func(c *core.Container, _ pod.ContainerType) bool {
		key := core.DeprecatedAppArmorAnnotationKeyPrefix + c.Name
		annotation, ok := p.Annotations[key]
		if !ok || c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
			return true
		}
		profile := pod.ApparmorFieldForAnnotation(annotation)
		if profile != nil && len(corevalidation.ValidateAppArmorProfileField(profile, &field.Path{})) > 0 {
			profile = nil
		}
		warn := profile == nil
		if profile != nil && !apiequality.Semantic.DeepEqual(profile, podProfile) {
			if c.SecurityContext == nil {
				c.SecurityContext = &core.SecurityContext{}
			}
			c.SecurityContext.AppArmorProfile = profile
			warn = true
		}
		if warn {
			path := field.NewPath("metadata", "annotations").Key(key)
			warning.AddWarning(ctx, "", fmt.Sprintf(`%s: deprecated since v1.30; use the "appArmorProfile" field instead`, path))
		}
		return true
	})
}

// preparePodUpdate readies an update of a Pod: its status kept, and its pod-level
// resources when the update leaves them out.
func preparePodUpdate(_ context.Context, p, old *core.Pod) {
	p.Status = old.Status
	if fixPodLevelResourceDefaults() {
		keepPodLevelResources(p, old)
	}
	finishPodUpdate(p, old)
}

// prepareEphemeralContainers readies an update through the ephemeralcontainers
// subresource: nothing but the ephemeral containers changes.
func prepareEphemeralContainers(_ context.Context, p, old *core.Pod) {
	onlyEphemeralContainers(p, old)
	finishPodUpdate(p, old)
}

// prepareResize readies an update through the resize subresource: nothing but the
// resources changes, and pod-level resources are kept and defaulted.
func prepareResize(_ context.Context, p, old *core.Pod) {
	onlyResize(p, old)
	if fixPodLevelResourceDefaults() {
		keepPodLevelResources(p, old)
		if p.Spec.Resources != nil {
			pod.DefaultPodLevelResources(p)
		}
	}
	finishPodUpdate(p, old)
}

// finishPodUpdate drops the fields of gates that are off and bumps the generation of
// a changed spec, the last steps of every update of a Pod's spec.
func finishPodUpdate(p, old *core.Pod) {
	pod.DropDisabledPodFields(p, old)
	if !apiequality.Semantic.DeepEqual(p.Spec, old.Spec) {
		p.Generation++
	}
}

// fixPodLevelResourceDefaults reports whether updates keep and default pod-level
// resources (PodLevelResourcesFixDefaulting).
func fixPodLevelResourceDefaults() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.PodLevelResourcesFixDefaulting)
}

// keepPodLevelResources keeps the pod-level resources of old when an update leaves
// them out altogether (a client that does not know them).
func keepPodLevelResources(p, old *core.Pod) {
	if p.Spec.Resources == nil && old.Spec.Resources != nil {
		p.Spec.Resources = old.Spec.Resources.DeepCopy()
	}
}

// onlyEphemeralContainers makes an update of the ephemeralcontainers subresource
// change nothing but them and the metadata a status update may change.
func onlyEphemeralContainers(p, old *core.Pod) {
	ephemeral := p.Spec.EphemeralContainers
	p.Spec = *old.Spec.DeepCopy()
	p.Spec.EphemeralContainers = ephemeral
	p.Status = old.Status
	metav1.ResetObjectMetaForStatus(&p.ObjectMeta, &old.ObjectMeta)
}

// onlyResize makes an update of the resize subresource change nothing but the
// containers' (and init containers') resources and resize policies, the pod-level
// resources where InPlacePodLevelResourcesVerticalScaling is on, the volumes where
// InPlacePodVerticalScalingMemoryBackedVolumes is, and the metadata a status update may
// change. An update that adds, removes, reorders or renames containers is left as it
// is, for validation to refuse.
func onlyResize(p, old *core.Pod) {
	if len(p.Spec.Containers) != len(old.Spec.Containers) || len(p.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return
	}
	gate := utilfeature.DefaultFeatureGate.Enabled
	resources, volumes := p.Spec.Resources, old.Spec.Volumes
	if gate(features.InPlacePodVerticalScalingMemoryBackedVolumes) {
		volumes = p.Spec.Volumes
	}
	containers := resizedContainers(p.Spec.Containers, old.Spec.Containers)
	initContainers := resizedContainers(p.Spec.InitContainers, old.Spec.InitContainers)
	p.Spec = *old.Spec.DeepCopy()
	if gate(features.InPlacePodLevelResourcesVerticalScaling) {
		p.Spec.Resources = resources
	}
	p.Status = old.Status
	metav1.ResetObjectMetaForStatus(&p.ObjectMeta, &old.ObjectMeta)
	p.Spec.Containers, p.Spec.InitContainers, p.Spec.Volumes = containers, initContainers, volumes
}

// resizedContainers returns the old containers with the resources and resize policies
// of the new ones, or the new ones as they are if a name differs at some index.
func resizedContainers(containers, old []core.Container) []core.Container {
	if len(containers) == 0 {
		return containers
	}
	out := make([]core.Container, len(old))
	for i := range old {
		if old[i].Name != containers[i].Name {
			return containers
		}
		out[i] = *old[i].DeepCopy()
		out[i].Resources, out[i].ResizePolicy = containers[i].Resources, containers[i].ResizePolicy
	}
	return out
}

// preparePodStatus readies a status update of a Pod: its spec, owner references and
// deletion kept, and what an old or partial client leaves out kept from the old
// status (the QoS class, the resource claim statuses, observed generations).
func preparePodStatus(_ context.Context, p, old *core.Pod) {
	p.Spec = old.Spec
	p.DeletionTimestamp = nil
	p.OwnerReferences = old.OwnerReferences
	s, was := &p.Status, &old.Status
	if s.QOSClass == "" {
		s.QOSClass = was.QOSClass
	}
	if s.ResourceClaimStatuses == nil {
		s.ResourceClaimStatuses = was.ResourceClaimStatuses
	}
	if s.ExtendedResourceClaimStatus == nil {
		s.ExtendedResourceClaimStatus = was.ExtendedResourceClaimStatus
	}
	if s.NodeAllocatableResourceClaimStatuses == nil {
		s.NodeAllocatableResourceClaimStatuses = was.NodeAllocatableResourceClaimStatuses
	}
	keepObservedGenerations(p, old)
	pod.DropDisabledPodFields(p, old)
}

// keepObservedGenerations keeps the observed generations a status update leaves at
// zero: the status's, and each condition's, taken from the old conditions of its type
// in order (validation allows several conditions of one type).
func keepObservedGenerations(p, old *core.Pod) {
	if p.Status.ObservedGeneration == 0 {
		p.Status.ObservedGeneration = old.Status.ObservedGeneration
	}
	byType := map[core.PodConditionType][]int64{}
	for _, c := range old.Status.Conditions {
		byType[c.Type] = append(byType[c.Type], c.ObservedGeneration)
	}
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		var was int64
		if gens := byType[c.Type]; len(gens) > 0 {
			was, byType[c.Type] = gens[0], gens[1:]
		}
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = was
		}
	}
}

// validateRCUpdate validates an update of a ReplicationController, and refuses changes
// the old one's non-convertible annotations (written when it was converted from
// another kind) forbid: of its selector, or of a field unknown to the conversion.
func validateRCUpdate(_ context.Context, rc, old *core.ReplicationController) field.ErrorList {
	errs := corevalidation.ValidateReplicationControllerUpdate(rc, old, pod.GetValidationOptionsFromPodTemplate(rc.Spec.Template, old.Spec.Template))
	for key, value := range helper.NonConvertibleFields(old.Annotations) {
		parts := strings.Split(key, "/")
		if len(parts) != 2 {
			continue
		}
		switch broken := parts[1]; {
		case !strings.Contains(broken, "selector"):
			errs = append(errs, &field.Error{Type: field.ErrorTypeNotFound, Field: broken, BadValue: value, Detail: "unknown non-convertible field"})
		case !apiequality.Semantic.DeepEqual(old.Spec.Selector, rc.Spec.Selector):
			errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), rc.Spec.Selector, "cannot update non-convertible selector"))
		}
	}
	return errs
}
