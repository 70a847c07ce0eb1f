package quota

import (
	"fmt"
	"strings"

	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// columns are the printer columns tableCells fills, the catalog's (kubectl's).
var columns = []string{"Age", "Request", "Limit"}

// tableCells prints a quota as kubectl shows it: its age, then "name: used/hard" for
// each resource of status.hard, limits.* under LIMIT and the rest under REQUEST.
func tableCells(obj *unstructured.Unstructured) []interface{} {
	hard, _, _ := unstructured.NestedMap(obj.Object, "status", "hard")
	used, _, _ := unstructured.NestedMap(obj.Object, "status", "used")
	var request, limit []string
	for _, name := range sortedKeys(hard) {
		cell := fmt.Sprintf("%s: %s/%s", name, quantity(used[name]), quantity(hard[name]))
		if strings.HasPrefix(name, "limits.") {
			limit = append(limit, cell)
		} else {
			request = append(request, cell)
		}
	}
	return []interface{}{metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp()), strings.Join(request, ", "), strings.Join(limit, ", ")}
}

// quantity prints a stored quantity; absent is zero.
func quantity(v interface{}) string {
	if v == nil {
		return "0"
	}
	q, err := resource.ParseQuantity(fmt.Sprint(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return q.String()
}
