package quota

import (
	"strings"
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

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		spec, status map[string]interface{}
		want         []string // substrings of the errors, in order; none for valid
	}{
		{name: "valid", spec: map[string]interface{}{"hard": map[string]interface{}{"cpu": "500m", "configmaps": int64(3), "count/widgets.example.com": "2", "requests.example.com/dongle": "1"}}},
		{name: "negative", spec: map[string]interface{}{"hard": map[string]interface{}{"memory": "-1Gi"}},
			want: []string{`spec.hard[memory]: Invalid value: "-1Gi": must be greater than or equal to 0`}},
		{name: "fraction of a count", status: map[string]interface{}{"used": map[string]interface{}{"secrets": "0.5"}},
			want: []string{`status.used[secrets]: Invalid value: "500m": must be an integer`}},
		{name: "unknown name", spec: map[string]interface{}{"hard": map[string]interface{}{"gpus": "1"}},
			want: []string{`spec.hard[gpus]: Invalid value: "gpus": must be a standard resource for quota`}},
		{name: "not a quantity", spec: map[string]interface{}{"hard": map[string]interface{}{"cpu": "lots"}},
			want: []string{`spec.hard[cpu]: Invalid value: "lots"`}},
		{name: "scopes", spec: map[string]interface{}{"hard": map[string]interface{}{"pods": "1"}, "scopes": []interface{}{"BestEffort", "BestEffort", "Often"}},
			want: []string{`spec.scopes[1]: Duplicate value: "BestEffort"`, `spec.scopes[2]: Unsupported value: "Often"`}},
		{name: "selector values", spec: map[string]interface{}{"hard": map[string]interface{}{"pods": "1"}, "scopeSelector": map[string]interface{}{"matchExpressions": []interface{}{
			map[string]interface{}{"scopeName": "PriorityClass", "operator": "Exists", "values": []interface{}{"high"}},
			map[string]interface{}{"scopeName": "PriorityClass", "operator": "Near", "values": []interface{}{"high"}},
		}}}, want: []string{"spec.scopeSelector.matchExpressions[0].values: Invalid value", `spec.scopeSelector.matchExpressions[1].operator: Unsupported value: "Near"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validate(quotaObject(tc.spec, tc.status))
			if len(errs) != len(tc.want) {
				t.Fatalf("got %v, want %d errors: %v", errs, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d: %q lacks %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}

func TestCanonicalizeAndTable(t *testing.T) {
	obj := quotaObject(map[string]interface{}{"hard": map[string]interface{}{"cpu": "1000m", "pods": int64(4)}},
		map[string]interface{}{
			"hard": map[string]interface{}{"cpu": "1000m", "pods": int64(4), "limits.memory": "1024Mi"},
			"used": map[string]interface{}{"cpu": "250m", "pods": "2"},
		})
	canonicalize(obj)
	if got := obj["spec"].(map[string]interface{})["hard"]; got.(map[string]interface{})["cpu"] != "1" || got.(map[string]interface{})["pods"] != "4" {
		t.Errorf("canonical spec.hard: %v, want cpu 1 and pods 4", got)
	}
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
