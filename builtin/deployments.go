package builtin

import (
	"fmt"

	"github.com/concordproject/concord/registry"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
