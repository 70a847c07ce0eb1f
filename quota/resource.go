package quota

import (
	"sort"

	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupResource is core/v1 resourcequotas.
var GroupResource = schema.GroupResource{Resource: "resourcequotas"}

// Configure gives res, the resourcequotas resource, kubectl's REQUEST and LIMIT
// columns. Its validation and canonical quantities are its strategy's (package
// kubesemantics).
func Configure(res *registry.Resource) error {
	if res.HasPrinterColumns(columns) {
		res.Hooks = &registry.Hooks{TableCells: tableCells}
	}
	return nil
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
