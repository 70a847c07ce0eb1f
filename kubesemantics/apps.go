package kubesemantics

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	pvcutil "k8s.io/kubernetes/pkg/api/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/kubernetes/pkg/features"

	_ "k8s.io/kubernetes/pkg/apis/apps/install" // apps' types, defaults and conversions
)

func init() { groups = append(groups, appsKinds) }

// appsKinds are the strategies of group apps.
func appsKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Group: "apps", Resource: "deployments"}:         deploymentKind().erase(),
		{Group: "apps", Resource: "replicasets"}:         replicaSetKind().erase(),
		{Group: "apps", Resource: "statefulsets"}:        statefulSetKind().erase(),
		{Group: "apps", Resource: "daemonsets"}:          daemonSetKind().erase(),
		{Group: "apps", Resource: "controllerrevisions"}: controllerRevisionKind().erase(),
	}
}

// deploymentKind is the strategy of Deployments.
func deploymentKind() kind[*apps.Deployment] {
	return kind[*apps.Deployment]{
		prepareCreate: func(_ context.Context, d *apps.Deployment) {
			d.Status, d.Generation = apps.DeploymentStatus{}, 1
			pod.DropDisabledTemplateFields(&d.Spec.Template, nil)
		},
		validate: func(_ context.Context, d *apps.Deployment) field.ErrorList {
			return appsvalidation.ValidateDeployment(d, pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
		},
		warnCreate: func(ctx context.Context, d *apps.Deployment) []string {
			return append(podNameWarnings(d.Name), pod.GetWarningsForPodTemplate(ctx, templatePath, &d.Spec.Template, nil)...)
		},
		prepareUpdate: func(_ context.Context, d, old *apps.Deployment) {
			d.Status = old.Status
			pod.DropDisabledTemplateFields(&d.Spec.Template, &old.Spec.Template)
			// A Deployment's annotations steer its rollout: they count as its spec.
			if !apiequality.Semantic.DeepEqual(d.Spec, old.Spec) || !apiequality.Semantic.DeepEqual(d.Annotations, old.Annotations) {
				d.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, d, old *apps.Deployment) field.ErrorList {
			return appsvalidation.ValidateDeploymentUpdate(d, old, pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, &old.Spec.Template))
		},
		warnUpdate: func(ctx context.Context, d, old *apps.Deployment) []string {
			return templateUpdateWarnings(ctx, templatePath, d.Generation != old.Generation, &d.Spec.Template, &old.Spec.Template)
		},
		prepareStatus: func(_ context.Context, d, old *apps.Deployment) {
			d.Spec, d.Labels = old.Spec, old.Labels
			if !terminatingReplicas() && old.Status.TerminatingReplicas == nil {
				d.Status.TerminatingReplicas = nil
			}
		},
		validateStatus: func(_ context.Context, d, old *apps.Deployment) field.ErrorList {
			return appsvalidation.ValidateDeploymentStatusUpdate(d, old)
		},
	}
}

// replicaSetKind is the strategy of ReplicaSets.
func replicaSetKind() kind[*apps.ReplicaSet] {
	return kind[*apps.ReplicaSet]{
		prepareCreate: func(_ context.Context, rs *apps.ReplicaSet) {
			rs.Status, rs.Generation = apps.ReplicaSetStatus{}, 1
			pod.DropDisabledTemplateFields(&rs.Spec.Template, nil)
		},
		validate: func(_ context.Context, rs *apps.ReplicaSet) field.ErrorList {
			return appsvalidation.ValidateReplicaSet(rs, pod.GetValidationOptionsFromPodTemplate(&rs.Spec.Template, nil))
		},
		warnCreate: func(ctx context.Context, rs *apps.ReplicaSet) []string {
			return append(podNameWarnings(rs.Name), pod.GetWarningsForPodTemplate(ctx, templatePath, &rs.Spec.Template, nil)...)
		},
		prepareUpdate: func(_ context.Context, rs, old *apps.ReplicaSet) {
			rs.Status = old.Status
			pod.DropDisabledTemplateFields(&rs.Spec.Template, &old.Spec.Template)
			if !apiequality.Semantic.DeepEqual(rs.Spec, old.Spec) {
				rs.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, rs, old *apps.ReplicaSet) field.ErrorList {
			return appsvalidation.ValidateReplicaSetUpdate(rs, old, pod.GetValidationOptionsFromPodTemplate(&rs.Spec.Template, &old.Spec.Template))
		},
		warnUpdate: func(ctx context.Context, rs, old *apps.ReplicaSet) []string {
			return templateUpdateWarnings(ctx, templatePath, rs.Generation != old.Generation, &rs.Spec.Template, &old.Spec.Template)
		},
		prepareStatus: func(_ context.Context, rs, old *apps.ReplicaSet) {
			rs.Spec = old.Spec
			if !terminatingReplicas() && old.Status.TerminatingReplicas == nil {
				rs.Status.TerminatingReplicas = nil
			}
		},
		validateStatus: func(_ context.Context, rs, old *apps.ReplicaSet) field.ErrorList {
			return appsvalidation.ValidateReplicaSetStatusUpdate(rs, old)
		},
	}
}

// terminatingReplicas reports whether the status of Deployments and ReplicaSets may
// count terminating replicas.
func terminatingReplicas() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.DeploymentReplicaSetTerminatingReplicas)
}

// podNameWarnings warns of a workload name that is no DNS label, as the names of its
// Pods and their hostnames derive from it.
func podNameWarnings(name string) []string {
	if msgs := utilvalidation.IsDNS1123Label(name); len(msgs) > 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
	}
	return nil
}

// statefulSetKind is the strategy of StatefulSets.
func statefulSetKind() kind[*apps.StatefulSet] {
	return kind[*apps.StatefulSet]{
		prepareCreate: func(_ context.Context, s *apps.StatefulSet) {
			s.Status, s.Generation = apps.StatefulSetStatus{}, 1
			dropStatefulSetMaxUnavailable(s, nil)
			pod.DropDisabledTemplateFields(&s.Spec.Template, nil)
		},
		validate: func(_ context.Context, s *apps.StatefulSet) field.ErrorList {
			return appsvalidation.ValidateStatefulSet(s, statefulSetOptions(nil), pod.GetValidationOptionsFromPodTemplate(&s.Spec.Template, nil))
		},
		warnCreate: func(ctx context.Context, s *apps.StatefulSet) []string {
			return statefulSetWarnings(pod.GetWarningsForPodTemplate(ctx, templatePath, &s.Spec.Template, nil), s, nil)
		},
		prepareUpdate: func(_ context.Context, s, old *apps.StatefulSet) {
			s.Status = old.Status
			dropStatefulSetMaxUnavailable(s, old)
			pod.DropDisabledTemplateFields(&s.Spec.Template, &old.Spec.Template)
			if !apiequality.Semantic.DeepEqual(s.Spec, old.Spec) {
				s.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, s, old *apps.StatefulSet) field.ErrorList {
			return appsvalidation.ValidateStatefulSetUpdate(s, old, statefulSetOptions(old), pod.GetValidationOptionsFromPodTemplate(&s.Spec.Template, &old.Spec.Template))
		},
		warnUpdate: func(ctx context.Context, s, old *apps.StatefulSet) []string {
			return statefulSetWarnings(templateUpdateWarnings(ctx, templatePath, s.Generation != old.Generation, &s.Spec.Template, &old.Spec.Template), s, old)
		},
		prepareStatus: func(_ context.Context, s, old *apps.StatefulSet) { s.Spec = old.Spec },
		validateStatus: func(_ context.Context, s, old *apps.StatefulSet) field.ErrorList {
			return appsvalidation.ValidateStatefulSetStatusUpdate(s, old)
		},
	}
}

// statefulSetOptions are the options of a StatefulSet's validation, old nil on
// create. A new StatefulSet needs a valid service name; an update tolerates what it
// cannot change anyway (the service name, the volume claim templates) as stored. The
// Recreate update strategy needs its gate, unless the stored object uses it.
func statefulSetOptions(old *apps.StatefulSet) appsvalidation.StatefulSetValidationOptions {
	recreate := utilfeature.DefaultFeatureGate.Enabled(features.StatefulSetRecreateStrategy)
	if old == nil {
		return appsvalidation.StatefulSetValidationOptions{AllowStatefulSetRecreateStrategy: recreate}
	}
	return appsvalidation.StatefulSetValidationOptions{
		AllowInvalidServiceName:          true,
		SkipValidateVolumeClaimTemplates: true,
		AllowStatefulSetRecreateStrategy: recreate || old.Spec.UpdateStrategy.Type == apps.RecreateStatefulSetStrategyType,
	}
}

// dropStatefulSetMaxUnavailable clears the rolling update's maxUnavailable while its
// gate is off, unless old (nil on create) already sets it.
func dropStatefulSetMaxUnavailable(s, old *apps.StatefulSet) {
	if utilfeature.DefaultFeatureGate.Enabled(features.MaxUnavailableStatefulSet) {
		return
	}
	if old != nil && old.Spec.UpdateStrategy.RollingUpdate != nil && old.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable != nil {
		return
	}
	if s.Spec.UpdateStrategy.RollingUpdate != nil {
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = nil
	}
}

// statefulSetWarnings adds to the template's warnings those of a StatefulSet's
// volume claim templates and of a negative revision history limit. The warnings of a
// claim template are under its index on create, under its index's "Spec" (capital,
// as kube-apiserver words them) on update (old non-nil).
func statefulSetWarnings(warnings []string, s, old *apps.StatefulSet) []string {
	claims := field.NewPath("spec", "volumeClaimTemplates")
	for i, pvc := range s.Spec.VolumeClaimTemplates {
		path := claims.Index(i)
		if old != nil {
			path = path.Child("Spec")
		}
		warnings = append(warnings, pvcutil.GetWarningsForPersistentVolumeClaimSpec(path, pvc.Spec)...)
	}
	if limit := s.Spec.RevisionHistoryLimit; limit != nil && *limit < 0 {
		warnings = append(warnings, "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended")
	}
	return warnings
}

// daemonSetKind is the strategy of DaemonSets. spec.templateGeneration, which the
// API server alone sets, counts the changes of the Pod template.
func daemonSetKind() kind[*apps.DaemonSet] {
	return kind[*apps.DaemonSet]{
		prepareCreate: func(_ context.Context, d *apps.DaemonSet) {
			d.Status, d.Generation = apps.DaemonSetStatus{}, 1
			d.Spec.TemplateGeneration = max(d.Spec.TemplateGeneration, 1)
			pod.DropDisabledTemplateFields(&d.Spec.Template, nil)
		},
		validate: func(_ context.Context, d *apps.DaemonSet) field.ErrorList {
			return appsvalidation.ValidateDaemonSet(d, pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
		},
		warnCreate: func(ctx context.Context, d *apps.DaemonSet) []string {
			return pod.GetWarningsForPodTemplate(ctx, templatePath, &d.Spec.Template, nil)
		},
		prepareUpdate: prepareDaemonSetUpdate,
		validateUpdate: func(_ context.Context, d, old *apps.DaemonSet) field.ErrorList {
			opts := pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, &old.Spec.Template)
			opts.AllowInvalidLabelValueInSelector = opts.AllowInvalidLabelValueInSelector || metav1validation.LabelSelectorHasInvalidLabelValue(old.Spec.Selector)
			return appsvalidation.ValidateDaemonSetUpdate(d, old, opts)
		},
		warnUpdate: func(ctx context.Context, d, old *apps.DaemonSet) []string {
			return templateUpdateWarnings(ctx, templatePath, d.Spec.TemplateGeneration != old.Spec.TemplateGeneration, &d.Spec.Template, &old.Spec.Template)
		},
		prepareStatus: func(_ context.Context, d, old *apps.DaemonSet) { d.Spec = old.Spec },
		validateStatus: func(_ context.Context, d, old *apps.DaemonSet) field.ErrorList {
			return appsvalidation.ValidateDaemonSetStatusUpdate(d, old)
		},
	}
}

// prepareDaemonSetUpdate keeps the status and the template generation a client may
// not set; a changed template counts one more template generation, and any change
// of the spec one more generation.
func prepareDaemonSetUpdate(_ context.Context, d, old *apps.DaemonSet) {
	pod.DropDisabledTemplateFields(&d.Spec.Template, &old.Spec.Template)
	d.Status = old.Status
	d.Spec.TemplateGeneration = old.Spec.TemplateGeneration
	templateChanged := !apiequality.Semantic.DeepEqual(d.Spec.Template, old.Spec.Template)
	if templateChanged {
		d.Spec.TemplateGeneration++
	}
	if templateChanged || !apiequality.Semantic.DeepEqual(d.Spec, old.Spec) {
		d.Generation = old.Generation + 1
	}
}

// controllerRevisionKind is the strategy of ControllerRevisions: validation alone (no
// status, and kube leaves their generation as the client wrote it).
func controllerRevisionKind() kind[*apps.ControllerRevision] {
	return kind[*apps.ControllerRevision]{
		validate: func(_ context.Context, r *apps.ControllerRevision) field.ErrorList {
			return appsvalidation.ValidateControllerRevisionCreate(r)
		},
		validateUpdate: func(_ context.Context, r, old *apps.ControllerRevision) field.ErrorList {
			return appsvalidation.ValidateControllerRevisionUpdate(r, old)
		},
	}
}
