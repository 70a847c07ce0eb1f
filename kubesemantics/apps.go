package kubesemantics

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
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
		{Group: "apps", Resource: "deployments"}: kind[*apps.Deployment]{
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
		}.erase(),
		{Group: "apps", Resource: "replicasets"}: kind[*apps.ReplicaSet]{
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
		}.erase(),
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
