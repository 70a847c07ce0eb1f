package builtin

import (
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var secretsGR = schema.GroupResource{Resource: "secrets"}

// secretColumns are the printer columns secretTableCells fills, the catalog's.
var secretColumns = []string{"Type", "Data", "Age"}

// configureSecrets gives core Secrets what Kubernetes' API server gives them beyond
// their strategy (package kubesemantics: stringData merged into data, type Opaque by
// default, validation): the type field selector, and kubectl's columns.
func configureSecrets(res *registry.Resource) error {
	for i := range res.Versions {
		res.Versions[i].SelectableFields = append(res.Versions[i].SelectableFields, apiextensionsv1.SelectableField{JSONPath: ".type"})
	}
	if res.HasPrinterColumns(secretColumns) {
		res.Hooks = &registry.Hooks{TableCells: secretTableCells}
	}
	return nil
}

// secretTableCells prints TYPE, DATA (the number of keys) and AGE as kubectl does.
func secretTableCells(obj *unstructured.Unstructured) []interface{} {
	typ, _, _ := unstructured.NestedString(obj.Object, "type")
	data, _, _ := unstructured.NestedMap(obj.Object, "data")
	return []interface{}{typ, int64(len(data)), metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())}
}
