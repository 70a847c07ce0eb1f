package registry

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzSelectors parses arbitrary label and field selectors as a list or watch asks for
// them (NewPredicate) and matches the predicate against a few objects. A selector that
// does not parse must be a 400, never a panic; a predicate that parses must match
// without panicking, and a field selector that requires metadata.name to be a value
// (what request.Parse turns into the request's Name, which authorization by
// resourceNames checks) must match no object of another name.
func FuzzSelectors(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""},
		{"app=web", ""},
		{"app==web,tier!=db", "metadata.name=a"},
		{"app in (web, api),!canary", "metadata.namespace=ns"},
		{"app notin (web),tier", "metadata.name!=a,metadata.namespace==ns"},
		{"environment,environment notin (frontend)", "spec.color=blue"},
		{"x>1,y<10", "status.phase=Running"},
		{"example.com/app=a_b-c.d", `metadata.name=a\,b`},
		{"", `metadata.name=a\=b\\c`},
		{"", "metadata.name=a,metadata.name=b"},
		{"", "metadata.name="},
		{"", "metadata.uid=x"},
		{"", "spec=x"},
		{"", "spec.color.inner=x"},
		{"a=", "="},
		{"(", ","},
		{"!", "!"},
		{"a in (", "metadata.name"},
		{"a in ()", "metadata.name=="},
		{"a=b=c", "metadata.name=a=b"},
		{strings.Repeat("a,", 200) + "a", strings.Repeat("metadata.name=a,", 100) + "metadata.name=a"},
		{strings.Repeat("(", 300), strings.Repeat(`\`, 301)},
		{"ünïcode=välue", "metadata.name=ünïcode"},
		{"\x00=\xff", "metadata.name=\x00\xff"},
		{strings.Repeat("k", 64) + "=" + strings.Repeat("v", 64), ""},
		{"a/b/c=d", "metadata.name=a/b"},
	} {
		f.Add(s[0], s[1], "a", true)
		f.Add(s[0], s[1], "a/b", false)
	}
	f.Add("app=web", "metadata.name=a,b", "a,b", true)
	f.Add("", `metadata.name=a\,b`, "a,b", true)

	f.Fuzz(func(t *testing.T, label, field, objName string, namespaced bool) {
		res := &Resource{
			Group:          "example.com",
			Names:          apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"},
			Namespaced:     namespaced,
			StorageVersion: "v1",
			Versions: []Version{{Name: "v1", Served: true, SelectableFields: []apiextensionsv1.SelectableField{
				{JSONPath: ".spec.color"}, {JSONPath: ".status.phase"},
			}}},
		}
		opts := metav1.ListOptions{LabelSelector: label, FieldSelector: field}
		p, err := NewPredicate(res, "v1", opts)
		if err != nil {
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("NewPredicate(%q, %q): error %T is not a StatusError: %v", label, field, err, err)
			}
			if se.ErrStatus.Code != http.StatusBadRequest {
				t.Fatalf("NewPredicate(%q, %q): code %d, want 400: %v", label, field, se.ErrStatus.Code, err)
			}
			return
		}
		if label == "" && field == "" && !p.Empty() {
			t.Fatalf("empty selectors give a predicate that is not empty")
		}
		objs := []*Object{
			{Object: map[string]interface{}{}},
			{Object: map[string]interface{}{
				"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]interface{}{"name": objName, "namespace": "ns",
					"labels": map[string]interface{}{"app": "web", "tier": "db", "k": objName}},
				"spec":   map[string]interface{}{"color": objName},
				"status": map[string]interface{}{"phase": int64(3)},
			}},
			{Object: map[string]interface{}{
				"metadata": map[string]interface{}{"name": "a", "namespace": objName},
				"spec":     map[string]interface{}{"color": map[string]interface{}{"inner": "x"}},
				"status":   map[string]interface{}{"phase": []interface{}{"x"}},
			}},
			{Object: map[string]interface{}{
				"metadata": "not a map",
				"spec":     map[string]interface{}{"color": true},
				"status":   map[string]interface{}{"phase": 1.5},
			}},
		}
		name, byName := p.Field.RequiresExactMatch("metadata.name")
		for _, obj := range objs {
			matched := p.Matches(obj)
			if matched && byName && obj.GetName() != name {
				t.Fatalf("field selector %q requires metadata.name=%q but matches an object named %q",
					field, name, obj.GetName())
			}
		}
	})
}
