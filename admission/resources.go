package admission

import (
	"github.com/concordproject/concord/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The admissionregistration.k8s.io resources whose behaviour this package gives.
var (
	ValidatingWebhookConfigurationsGR = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingwebhookconfigurations"}
	MutatingWebhookConfigurationsGR   = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingwebhookconfigurations"}
	ValidatingPoliciesGR              = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicies"}
	ValidatingPolicyBindingsGR        = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicybindings"}
	MutatingPoliciesGR                = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingadmissionpolicies"}
	MutatingPolicyBindingsGR          = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingadmissionpolicybindings"}
)

// Configurers returns what gives the webhook configurations kubectl's WEBHOOKS
// column. The admission configurations' defaults and validation, their CEL compiled
// at the server's minimum compatibility version included, are Kubernetes' (package
// kubesemantics).
func Configurers() map[schema.GroupResource]func(*registry.Resource) error {
	return map[schema.GroupResource]func(*registry.Resource) error{
		ValidatingWebhookConfigurationsGR: configureTable,
		MutatingWebhookConfigurationsGR:   configureTable,
	}
}

// configureTable sets the table hook of a webhook configuration resource, if the
// catalog gives it kubectl's columns.
func configureTable(res *registry.Resource) error {
	if res.HasPrinterColumns(webhookColumns) {
		res.Hooks = &registry.Hooks{TableCells: webhookTable}
	}
	return nil
}

// webhookColumns are the catalog's printer columns of webhook configurations.
var webhookColumns = []string{"Webhooks", "Age"}

// webhookTable prints WEBHOOKS (how many) and AGE, as kubectl does.
func webhookTable(obj *unstructured.Unstructured) []interface{} {
	hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
	return []interface{}{int64(len(hooks)), metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())}
}
