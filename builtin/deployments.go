package builtin

import (
	"context"
	"fmt"
	"reflect"
	"strings"

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

// configureDeployments gives apps Deployments what Kubernetes' API server (not its
// controllers) gives them: the defaults of apps/v1 and of the pod template, a selector
// that must select the template's labels and may not change, and kubectl's READY
// column. No controller acts on them: they are data, as in a cluster whose controller
// manager is down.
func configureDeployments(res *registry.Resource) error {
	res.Hooks = &registry.Hooks{
		PrepareForCreate: func(_ context.Context, obj *unstructured.Unstructured) { defaultDeployment(obj.Object) },
		PrepareForUpdate: func(_ context.Context, obj, _ *unstructured.Unstructured) { defaultDeployment(obj.Object) },
		Validate: func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
			return validateSelector(obj.Object)
		},
		ValidateUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
			errs := validateSelector(obj.Object)
			sel, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "selector")
			oldSel, _, _ := unstructured.NestedFieldNoCopy(old.Object, "spec", "selector")
			if !reflect.DeepEqual(sel, oldSel) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), sel, "field is immutable"))
			}
			return errs
		},
	}
	if hasColumns(res, deploymentColumns) {
		res.Hooks.TableCells = deploymentTableCells
	}
	return nil
}

// defaultDeployment sets the defaults of apps/v1 Deployments that Kubernetes sets when
// it decodes one (SetDefaults_Deployment and those of the pod template's spec and
// containers), on the unstructured object, leaving every set field alone.
func defaultDeployment(obj map[string]interface{}) {
	spec := child(obj, "spec")
	setDefault(spec, "replicas", int64(1))
	setDefault(spec, "revisionHistoryLimit", int64(10))
	setDefault(spec, "progressDeadlineSeconds", int64(600))
	strategy := child(spec, "strategy")
	setDefault(strategy, "type", "RollingUpdate")
	if strategy["type"] == "RollingUpdate" {
		rolling := child(strategy, "rollingUpdate")
		setDefault(rolling, "maxUnavailable", "25%")
		setDefault(rolling, "maxSurge", "25%")
	}
	defaultPodSpec(child(child(spec, "template"), "spec"))
}

// defaultPodSpec sets Kubernetes' defaults of a pod spec and its containers.
func defaultPodSpec(pod map[string]interface{}) {
	setDefault(pod, "dnsPolicy", "ClusterFirst")
	setDefault(pod, "restartPolicy", "Always")
	setDefault(pod, "terminationGracePeriodSeconds", int64(30))
	setDefault(pod, "schedulerName", "default-scheduler")
	setDefault(pod, "securityContext", map[string]interface{}{})
	for _, list := range []string{"initContainers", "containers"} {
		containers, _ := pod[list].([]interface{})
		for _, c := range containers {
			container, ok := c.(map[string]interface{})
			if !ok {
				continue
			}
			image, _ := container["image"].(string)
			setDefault(container, "imagePullPolicy", pullPolicy(image))
			setDefault(container, "terminationMessagePath", "/dev/termination-log")
			setDefault(container, "terminationMessagePolicy", "File")
			ports, _ := container["ports"].([]interface{})
			for _, p := range ports {
				if port, ok := p.(map[string]interface{}); ok {
					setDefault(port, "protocol", "TCP")
				}
			}
		}
	}
}

// pullPolicy is the default pull policy of an image: Always for the latest tag (or
// none, which means latest), IfNotPresent for any other tag or a digest.
func pullPolicy(image string) string {
	if strings.Contains(image, "@") {
		return "IfNotPresent"
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(name, ":"); i >= 0 && name[i+1:] != "latest" {
		return "IfNotPresent"
	}
	return "Always"
}

// child returns obj[key] as an object, creating it if absent. A value of another type
// is left alone, and a detached map returned, for validation to report.
func child(obj map[string]interface{}, key string) map[string]interface{} {
	switch v := obj[key].(type) {
	case map[string]interface{}:
		return v
	case nil:
		m := map[string]interface{}{}
		obj[key] = m
		return m
	}
	return map[string]interface{}{}
}

func setDefault(obj map[string]interface{}, key string, value interface{}) {
	if v, ok := obj[key]; !ok || v == nil {
		obj[key] = value
	}
}

// validateSelector checks, as Kubernetes does for apps/v1, that spec.selector is set,
// not empty, and selects the pod template's labels.
func validateSelector(obj map[string]interface{}) field.ErrorList {
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
		return field.ErrorList{field.Invalid(path, raw, "empty selector is invalid for deployment")}
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
