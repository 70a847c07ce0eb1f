package upgradecheck

import (
	"slices"
	"testing"

	"github.com/concordproject/concord/catalog"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The catalog knows PodTemplate's template.spec.schedulingGroup since 1.36: release
// 1.35 does not know it, and the fields below it are not listed again.
func TestNewFields(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	podTemplates := schema.GroupResource{Resource: "podtemplates"}
	fields, err := NewFields(cat, "1.35")
	if err != nil {
		t.Fatal(err)
	}
	want := NewField{Version: "v1", Path: "template.spec.schedulingGroup", Introduced: "1.36"}
	if !slices.Contains(fields[podTemplates], want) {
		t.Errorf("1.35's new fields of podtemplates %v lack %v", fields[podTemplates], want)
	}
	for _, f := range fields[podTemplates] {
		if f.Path == "template.spec.schedulingGroup.podGroupName" {
			t.Errorf("%v is below a new field, listed already", f)
		}
	}
	if fields, err = NewFields(cat, cat.BinaryVersion().String()); err != nil || len(fields) != 0 {
		t.Errorf("the catalog's newest release knows every field: %v, %v", fields, err)
	}
	if _, err := NewFields(cat, "one"); err == nil {
		t.Error("NewFields accepted a release that is not one")
	}
}

func TestHasField(t *testing.T) {
	obj := map[string]any{
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "resizePolicy": []any{}}},
			"overhead":   map[string]any{"cpu": "1"},
			"nothing":    nil,
		},
	}
	for path, want := range map[string]bool{
		"spec.containers.[].resizePolicy": true,
		"spec.containers.[].image":        false,
		"spec.overhead.{}":                true,
		"spec.nothing":                    false,
		"spec.missing.deeper":             false,
		"spec":                            true,
	} {
		if got := hasField(obj, splitPath(path)); got != want {
			t.Errorf("hasField(%s) = %t, want %t", path, got, want)
		}
	}
}
