package kubesemantics

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	_ "k8s.io/kubernetes/pkg/apis/core/install" // core's types, defaults and conversions
)

// templatePath is where a workload's Pod template is, podTemplatePath a PodTemplate's.
var templatePath, podTemplatePath = field.NewPath("spec", "template"), field.NewPath("template")

func init() { groups = append(groups, coreKinds) }

// coreKinds are the strategies of the core group.
func coreKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Resource: "configmaps"}: kind[*core.ConfigMap]{
			validate: func(_ context.Context, c *core.ConfigMap) field.ErrorList { return corevalidation.ValidateConfigMap(c) },
			validateUpdate: func(_ context.Context, c, old *core.ConfigMap) field.ErrorList {
				return corevalidation.ValidateConfigMapUpdate(c, old)
			},
		}.erase(),
		{Resource: "podtemplates"}: kind[*core.PodTemplate]{
			prepareCreate: func(_ context.Context, t *core.PodTemplate) {
				t.Generation = 1
				pod.DropDisabledTemplateFields(&t.Template, nil)
			},
			validate: func(_ context.Context, t *core.PodTemplate) field.ErrorList {
				return corevalidation.ValidatePodTemplate(t, pod.GetValidationOptionsFromPodTemplate(&t.Template, nil))
			},
			warnCreate: func(ctx context.Context, t *core.PodTemplate) []string {
				return pod.GetWarningsForPodTemplate(ctx, podTemplatePath, &t.Template, nil)
			},
			prepareUpdate: func(_ context.Context, t, old *core.PodTemplate) {
				pod.DropDisabledTemplateFields(&t.Template, &old.Template)
				if !apiequality.Semantic.DeepEqual(t.Template, old.Template) {
					t.Generation = old.Generation + 1
				}
			},
			validateUpdate: func(_ context.Context, t, old *core.PodTemplate) field.ErrorList {
				return corevalidation.ValidatePodTemplateUpdate(t, old, pod.GetValidationOptionsFromPodTemplate(&t.Template, &old.Template))
			},
			warnUpdate: func(ctx context.Context, t, old *core.PodTemplate) []string {
				return templateUpdateWarnings(ctx, podTemplatePath, t.Generation != old.Generation, &t.Template, &old.Template)
			},
		}.erase(),
	}
}

// templateUpdateWarnings are the warnings of a Pod template's update: none unless it
// changed.
func templateUpdateWarnings(ctx context.Context, path *field.Path, changed bool, t, old *core.PodTemplateSpec) []string {
	if !changed {
		return nil
	}
	return pod.GetWarningsForPodTemplate(ctx, path, t, old)
}
