package catalog

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// enumOf returns the string values of the enum at path in s.
func enumOf(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) []string {
	t.Helper()
	at := SchemaAt(s, path)
	if at == nil {
		t.Fatalf("no %s in the schema", path)
	}
	var out []string
	for _, e := range at.Enum {
		out = append(out, enumValue(e))
	}
	return out
}

// The default catalog knows when Deployments' fields and enum values came (from the
// Go source of every release): a build of an older release lacks the later ones, and
// a server takes no new data in those its minimum compatibility release lacks.
func TestFieldHistory(t *testing.T) {
	cat, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	const (
		group      = "spec.template.spec.schedulingGroup" // PodSpec.SchedulingGroup, 1.36
		operator   = "spec.template.spec.tolerations.[].operator"
		mountFlags = "spec.template.spec.containers.[].volumeMounts.[].bindMountOptions" // 1.37
	)
	d := cat.Resource("apps", "deployments").Version("v1")
	if got := d.Fields[group]; got == nil || got.String() != "1.36" {
		t.Errorf("%s introduced at %v, want 1.36", group, got)
	}
	if got := d.EnumValues[operator]["Gt"]; got == nil || got.String() != "1.35" {
		t.Errorf("toleration operator Gt introduced at %v, want 1.35", got)
	}
	if _, ok := d.Fields[group+".podGroupName"]; ok {
		t.Errorf("a field of a struct that came with it is recorded")
	}

	old, err := cat.Truncate(version.MustParse("1.34"))
	if err != nil {
		t.Fatal(err)
	}
	od := old.Resource("apps", "deployments").Version("v1")
	if SchemaAt(od.Schema, group) != nil || SchemaAt(od.Schema, mountFlags) != nil {
		t.Error("a build of 1.34 knows fields of 1.36 and 1.37")
	}
	if got := enumOf(t, od.Schema, operator); slices.Contains(got, "Gt") || !slices.Contains(got, "Exists") {
		t.Errorf("a build of 1.34 has the toleration operators %v", got)
	}
	if SchemaAt(d.Schema, group) == nil || !slices.Contains(enumOf(t, d.Schema, operator), "Gt") {
		t.Error("Truncate changed the original catalog")
	}

	for _, tc := range []struct {
		min          string
		newFields    []string
		gtAccepted   bool
		reasonPrefix string
	}{
		{"1.34", []string{group, mountFlags}, false, "apps/v1 field introduced in release 1.36: the servers stay readable by release 1.34"},
		{"1.36", []string{mountFlags}, true, "apps/v1 field introduced in release 1.37: the servers stay readable by release 1.36"},
		{"1.37", nil, true, ""},
	} {
		res, err := cat.Resource("apps", "deployments").RegistryResource(Selection{StorageVersion: "v1", MinCompatibility: version.MustParse(tc.min)})
		if err != nil {
			t.Fatal(err)
		}
		v := res.Version("v1")
		var paths []string
		for _, f := range v.NewFields {
			paths = append(paths, strings.Join(f.Path, "."))
			if f.Path[len(f.Path)-1] == "schedulingGroup" && !strings.HasPrefix(f.Reason, tc.reasonPrefix) {
				t.Errorf("min %s: reason %q", tc.min, f.Reason)
			}
		}
		for _, want := range tc.newFields {
			if !slices.Contains(paths, want) {
				t.Errorf("min %s: new fields %v lack %s", tc.min, paths, want)
			}
		}
		if slices.Contains(paths, group) != slices.Contains(tc.newFields, group) {
			t.Errorf("min %s: new fields %v", tc.min, paths)
		}
		if got := slices.Contains(enumOf(t, v.Schema, operator), "Gt"); got != tc.gtAccepted {
			t.Errorf("min %s: toleration operator Gt accepted %v, want %v", tc.min, got, tc.gtAccepted)
		}
	}
}
