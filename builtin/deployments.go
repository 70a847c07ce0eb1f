package builtin

import (
	"context"
	"fmt"
	"reflect"

	"github.com/concordproject/concord/registry"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var deploymentsGR = schema.GroupResource{Group: "apps", Resource: "deployments"}

// configureDeployments gives apps Deployments kubectl's READY column. Their defaults
// and validation are Kubernetes' (package kubesemantics). No controller acts on them:
// they are data, as in a cluster whose controller manager is down.
func configureDeployments(res *registry.Resource) error {
	if res.HasPrinterColumns(deploymentColumns) {
		res.Hooks = &registry.Hooks{TableCells: deploymentTableCells}
	}
	return nil
}

// replicatedHooks are the hooks of a workload with a selector and a pod template:
// defaults on every write, a selector that must select the template's labels and may
// not change.
func replicatedHooks(setDefaults func(map[string]interface{}), kind string) *registry.Hooks {
	return &registry.Hooks{
		PrepareForCreate: func(_ context.Context, obj *unstructured.Unstructured) { setDefaults(obj.Object) },
		PrepareForUpdate: func(_ context.Context, obj, _ *unstructured.Unstructured) { setDefaults(obj.Object) },
		Validate: func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
			return validateSelector(obj.Object, kind)
		},
		ValidateUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
			return append(validateSelector(obj.Object, kind), immutableSelector(obj.Object, old.Object)...)
		},
	}
}

// validateSelector checks, as Kubernetes does for apps/v1, that spec.selector is set,
// not empty, and selects the pod template's labels; kind names the workload in the
// messages.
func validateSelector(obj map[string]interface{}, kind string) field.ErrorList {
	path := field.NewPath("spec", "selector")
	raw, ok, _ := unstructured.NestedMap(obj, "spec", "selector")
	if !ok {
		return field.ErrorList{field.Required(path, "")}
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return field.ErrorList{field.Invalid(path, raw, err.Error())}
	}
	if len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
		return field.ErrorList{field.Invalid(path, raw, "empty selector is invalid for "+kind)}
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return field.ErrorList{field.Invalid(path, raw, err.Error())}
	}
	templateLabels, _, _ := unstructured.NestedStringMap(obj, "spec", "template", "metadata", "labels")
	if !sel.Matches(labels.Set(templateLabels)) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), templateLabels, "`selector` does not match template `labels`")}
	}
	return nil
}

// immutableSelector refuses a change of spec.selector.
func immutableSelector(obj, old map[string]interface{}) field.ErrorList {
	sel, _, _ := unstructured.NestedFieldNoCopy(obj, "spec", "selector")
	oldSel, _, _ := unstructured.NestedFieldNoCopy(old, "spec", "selector")
	if !reflect.DeepEqual(sel, oldSel) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), sel, "field is immutable")}
	}
	return nil
}

// deploymentColumns are the printer columns deploymentTableCells fills, the catalog's.
var deploymentColumns = []string{"Ready", "Up-to-date", "Available", "Age"}

// deploymentTableCells prints READY as kubectl does (ready/desired), and the counts.
func deploymentTableCells(obj *unstructured.Unstructured) []interface{} {
	desired, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
	updated, _, _ := unstructured.NestedInt64(obj.Object, "status", "updatedReplicas")
	available, _, _ := unstructured.NestedInt64(obj.Object, "status", "availableReplicas")
	return []interface{}{fmt.Sprintf("%d/%d", ready, desired), updated, available, metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())}
}
