package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func quotaObject(spec, status map[string]interface{}) map[string]interface{} {
	obj := map[string]interface{}{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": map[string]interface{}{"name": "q"}}
	if spec != nil {
		obj["spec"] = spec
	}
	if status != nil {
		obj["status"] = status
	}
	return obj
}

func TestTable(t *testing.T) {
	obj := quotaObject(map[string]interface{}{"hard": map[string]interface{}{"cpu": "1", "pods": "4"}},
		map[string]interface{}{
			"hard": map[string]interface{}{"cpu": "1", "pods": "4", "limits.memory": "1Gi"},
			"used": map[string]interface{}{"cpu": "250m", "pods": "2"},
		})
	cells := tableCells(&unstructured.Unstructured{Object: obj})
	if cells[1] != "cpu: 250m/1, pods: 2/4" || cells[2] != "limits.memory: 0/1Gi" {
		t.Errorf("REQUEST %q, LIMIT %q", cells[1], cells[2])
	}
}

func TestCountedResource(t *testing.T) {
	for name, want := range map[corev1.ResourceName]schema.GroupResource{
		"count/widgets.example.com": {Group: "example.com", Resource: "widgets"},
		"count/configmaps":          {Resource: "configmaps"},
		"secrets":                   {Resource: "secrets"},
	} {
		if got, ok := countedResource(name); !ok || got != want {
			t.Errorf("%s: got %v %v, want %v", name, got, ok, want)
		}
	}
	for _, name := range []corev1.ResourceName{"cpu", "requests.storage", "count/", "pods"} {
		if gr, ok := countedResource(name); ok {
			t.Errorf("%s counts %v, want no resource", name, gr)
		}
	}
}
