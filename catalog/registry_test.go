package catalog

import (
	"errors"
	"slices"
	"strings"
	"testing"

	objectschema "github.com/concordproject/concord/schema"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

func namesOf(plural, kind string) apiextensionsv1.CustomResourceDefinitionNames {
	return apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind}
}

func TestRegistryResource(t *testing.T) {
	c := mustDefault(t)
	hpa := c.Resource("autoscaling", "horizontalpodautoscalers")
	at := version.MajorMinor(1, 25)
	res, err := hpa.RegistryResource(Selection{
		Served:         func(v *Version) bool { return v.AvailableAt(at) && v.Name != "v2beta1" },
		StorageVersion: "v2",
		At:             at,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Group != "autoscaling" || res.Names.Kind != "HorizontalPodAutoscaler" || res.Names.Plural != "horizontalpodautoscalers" ||
		!slices.Equal(res.Names.ShortNames, []string{"hpa"}) || !res.Namespaced || res.StorageVersion != "v2" || res.Hooks != nil {
		t.Errorf("resource = %+v", res)
	}
	if _, ok := res.Converter.(*Converter); !ok {
		t.Errorf("converter is %T, want *Converter", res.Converter)
	}
	if got := res.ServedVersions(); !slices.Equal(got, []string{"v2", "v1", "v2beta2"}) {
		t.Errorf("served = %v", got)
	}
	if got := res.DecodableVersions(); !slices.Equal(got, []string{"v2", "v1", "v2beta2", "v2beta1"}) {
		t.Errorf("decodable = %v", got)
	}
	v2beta2 := res.Version("v2beta2")
	if want := "autoscaling/v2beta2 HorizontalPodAutoscaler is deprecated in v1.23+, unavailable in v1.26+; use autoscaling/v2 HorizontalPodAutoscaler"; !v2beta2.Deprecated || v2beta2.DeprecationWarning == nil || *v2beta2.DeprecationWarning != want {
		t.Errorf("v2beta2 deprecation = %v %v, want %q", v2beta2.Deprecated, v2beta2.DeprecationWarning, want)
	}
	if v2 := res.Version("v2"); v2.Deprecated || v2.DeprecationWarning != nil || v2.Schema == nil || v2.Subresources == nil || v2.Subresources.Status == nil || len(v2.PrinterColumns) != 3 {
		t.Errorf("v2 = %+v", v2)
	}

	// Schemas and their compiled forms are shared by the results of one minimum
	// compatibility release (never to be changed); nothing else is shared.
	again, err := hpa.RegistryResource(Selection{StorageVersion: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	if v2, w := res.Version("v2"), again.Version("v2"); v2.Schema != w.Schema || v2.Compiled == nil || w.Compiled == nil || !sameCompiled(t, v2.Compiled, w.Compiled) {
		t.Error("two results of one release compile or hold the schema apart")
	}
	res.Version("v2").PrinterColumns[0].Name = "changed"
	if hpa.PrinterColumns[0].Name != "MinPods" {
		t.Error("RegistryResource shares columns with the catalog")
	}

	// Without At, nothing is deprecated; without Served, nothing is served.
	res, err = hpa.RegistryResource(Selection{StorageVersion: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ServedVersions()) != 0 || res.Version("v2beta2").Deprecated {
		t.Errorf("served %v, v2beta2 deprecated %v", res.ServedVersions(), res.Version("v2beta2").Deprecated)
	}

	// Leases v1beta1: deprecated in 1.19, removed in 1.22.
	leases := c.Resource("coordination.k8s.io", "leases")
	res, err = leases.RegistryResource(Selection{StorageVersion: "v1", At: version.MajorMinor(1, 20)})
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Version("v1beta1").DeprecationWarning; w == nil || *w != "coordination.k8s.io/v1beta1 Lease is deprecated in v1.19+, unavailable in v1.22+; use coordination.k8s.io/v1 Lease" {
		t.Errorf("lease warning = %v", w)
	}

	if _, err := hpa.RegistryResource(Selection{StorageVersion: "v3"}); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("unknown storage version: %v", err)
	}
}

// TestRegistryResourceForEveryDefaultResource builds every resource of the default
// catalog, stored in its newest version, and checks the registry accepts it.
func TestRegistryResourceForEveryDefaultResource(t *testing.T) {
	c := mustDefault(t)
	for _, r := range c.Resources() {
		res, err := r.RegistryResource(Selection{
			Served:         func(v *Version) bool { return v.AvailableAt(c.BinaryVersion()) },
			StorageVersion: r.Versions[0].Name,
			At:             c.BinaryVersion(),
		})
		if err != nil {
			t.Errorf("%s: %v", r.GroupResource(), err)
			continue
		}
		if len(res.Versions) != len(r.Versions) {
			t.Errorf("%s: %d versions, want %d", r.GroupResource(), len(res.Versions), len(r.Versions))
		}
	}
}

// sameCompiled reports whether two Version.Compiled give one compilation, and
// fails the test if either does not compile.
func sameCompiled(t *testing.T, a, b func() (*objectschema.Schema, error)) bool {
	t.Helper()
	x, err := a()
	if err != nil {
		t.Fatal(err)
	}
	y, err := b()
	if err != nil {
		t.Fatal(err)
	}
	return x != nil && x == y
}

// RegistryResource leaves the compilation of Default's versions to their first use,
// which panics if it fails: every version of every resource of the default catalog
// compiles, at every minimum compatibility release a server of the binary's release
// may run with (the three before it, and its own) and at none.
func TestEveryWritableSchemaCompiles(t *testing.T) {
	cat, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	b := cat.BinaryVersion()
	mins := []*version.Version{nil}
	for _, r := range cat.Releases() {
		if r.AtLeast(version.MajorMinor(b.Major(), b.Minor()-3)) {
			mins = append(mins, r)
		}
	}
	compiled := 0
	seen := map[*apiextensionsv1.JSONSchemaProps]bool{}
	for _, r := range cat.Resources() {
		for i := range r.Versions {
			v := &r.Versions[i]
			for _, m := range mins {
				w := v.writableOf(m, r.apiVersion(v.Name))
				if seen[w.schema] {
					continue // the same schema as at another release: compiled there
				}
				seen[w.schema] = true
				s, err := w.compile()
				if err != nil {
					t.Errorf("%s %s at minimum compatibility %v: %v", r.GroupResource(), v.Name, m, err)
				}
				if (s != nil) != (w.schema != nil) {
					t.Errorf("%s %s at minimum compatibility %v: compiled %v of schema %v", r.GroupResource(), v.Name, m, s != nil, w.schema != nil)
				}
				compiled++
			}
		}
	}
	t.Logf("%d writable schemas compiled, at minimum compatibility releases %v and none", compiled, mins[1:])
}

// Another catalog's schemas (a file's, given by --api-catalog, or a truncation's,
// for --binary-version) are compiled by RegistryResource: one that does not compile
// is its error, at the server's start, not a failure at its first use.
func TestRegistryResourceCompilesOtherCatalogs(t *testing.T) {
	bad := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {}}} // not structural: spec has no type
	c, err := New([]*version.Version{version.MajorMinor(1, 30)}, []Resource{{Group: "example.com", Names: namesOf("widgets", "Widget"),
		Versions: []Version{{Name: "v1", Lifecycle: Lifecycle{Introduced: version.MajorMinor(1, 30)}, Schema: bad}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resource("example.com", "widgets").RegistryResource(Selection{StorageVersion: "v1"}); err == nil || !strings.Contains(err.Error(), "resource widgets.example.com version v1") {
		t.Errorf("a schema that does not compile: RegistryResource error %v", err)
	}
	def := mustDefault(t)
	old, err := def.Truncate(version.MajorMinor(def.BinaryVersion().Major(), def.BinaryVersion().Minor()-1))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range old.Resources() {
		if r.compileOnUse {
			t.Fatalf("%s of a truncated catalog compiles on use", r.GroupResource())
		}
	}
	for _, r := range def.Resources() {
		if !r.compileOnUse {
			t.Fatalf("%s of the default catalog is compiled by RegistryResource", r.GroupResource())
		}
	}
}
