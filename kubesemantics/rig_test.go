package kubesemantics

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/warning"
	"sigs.k8s.io/yaml"
)

// This file is the rig the tests of the networking, discovery, storage, node,
// scheduling and resource groups share: a resource configured with a 1.37 server's
// semantics (or gates of the test's choosing), objects written as YAML, and the
// creates and updates the store runs through registry.Semantics.

// rig is one resource under test.
type rig struct {
	t *testing.T
	r *registry.Resource
}

// rigGates are kube's gates at 1.37 (minimum compatibility 1.36) with set's gates
// set.
func rigGates(t *testing.T, set map[string]bool) *Gates {
	t.Helper()
	return rigGatesAt(t, "1.37", set)
}

// rigGatesAt are kube's gates at emulation version release (minimum compatibility
// the release before) with set's gates set: a gate locked on at 1.37 may still be
// turned off at an earlier release.
func rigGatesAt(t *testing.T, release string, set map[string]bool) *Gates {
	t.Helper()
	var concord = utilfeature.DefaultMutableFeatureGate.DeepCopyAndReset()
	if err := concord.SetEmulationVersion(version.MustParse(release)); err != nil {
		t.Fatal(err)
	}
	if err := concord.SetFromMap(set); err != nil {
		t.Fatal(err)
	}
	emulation := version.MustParse(release)
	g, err := NewGates(emulation, emulation.SubtractMinor(1), concord)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// rigCatalog is the catalog's resource group/plural as a 1.37 server serves it, with
// the semantics of gates (nil: 1.37's defaults).
func rigCatalog(t *testing.T, gates *Gates, group, plural string) *rig {
	t.Helper()
	return rigCatalogAt(t, gates, group, plural, nil)
}

// rigCatalogAt is rigCatalog for a server whose minimum compatibility version is
// minCompatibility (nil: none, every field writable).
func rigCatalogAt(t *testing.T, gates *Gates, group, plural string, minCompatibility *version.Version) *rig {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cr := c.Resource(group, plural)
	if cr == nil {
		t.Fatalf("the catalog has no %s.%s", plural, group)
	}
	at := version.MustParse("1.37")
	r, err := cr.RegistryResource(catalog.Selection{
		Served: func(v *catalog.Version) bool { return v.AvailableAt(at) }, StorageVersion: cr.Versions[0].Name, At: at,
		MinCompatibility: minCompatibility,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rigConfigured(t, gates, r)
}

// rigHand is a resource the catalog lacks, built by hand: kind in group at version,
// namespaced or not, with a status subresource or not.
func rigHand(t *testing.T, gates *Gates, group, version, kind, plural string, namespaced, status bool) *rig {
	t.Helper()
	r := &registry.Resource{
		Group:          group,
		Names:          apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
		Namespaced:     namespaced,
		StorageVersion: version,
		Versions:       []registry.Version{{Name: version, Served: true}},
	}
	if status {
		r.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	return rigConfigured(t, gates, r)
}

var rigDefaultGates = sync.OnceValues(func() (*Gates, error) {
	return NewGates(version.MustParse("1.37"), version.MustParse("1.36"), nil)
})

func rigConfigured(t *testing.T, gates *Gates, r *registry.Resource) *rig {
	t.Helper()
	if gates == nil {
		var err error
		if gates, err = rigDefaultGates(); err != nil {
			t.Fatal(err)
		}
	}
	if !New(gates).Configure(r) {
		t.Fatalf("no semantics for %s", r.GroupResource())
	}
	return &rig{t: t, r: r}
}

// rigWarnings records the warnings of one call.
type rigWarnings struct{ texts []string }

func (w *rigWarnings) AddWarning(_, text string) { w.texts = append(w.texts, text) }

// object decodes a YAML manifest as a request's body is decoded.
func (g *rig) object(manifest string) *registry.Object {
	g.t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		g.t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		g.t.Fatal(err)
	}
	return obj
}

// create defaults and creates manifest in version, as the store does, and returns
// the object, the errors and the warnings.
func (g *rig) create(version, manifest string) (*registry.Object, field.ErrorList, []string) {
	g.t.Helper()
	obj := g.object(manifest)
	obj.SetUID("6f6ad3e4-0a5b-4c7e-9d1a-2b3c4d5e6f70")
	if err := g.r.Semantics.Default(version, obj); err != nil {
		g.t.Fatal(err)
	}
	w := &rigWarnings{}
	errs, err := g.r.Semantics.Create(warning.WithWarningRecorder(g.t.Context(), w), version, obj)
	if err != nil {
		g.t.Fatal(err)
	}
	return obj, errs, w.texts
}

// mustCreate is create of a valid object, given resourceVersion 1 as if stored.
func (g *rig) mustCreate(version, manifest string) *registry.Object {
	g.t.Helper()
	obj, errs, _ := g.create(version, manifest)
	if len(errs) > 0 {
		g.t.Fatalf("creating a valid %s: %v", g.r.Names.Kind, errs)
	}
	obj.SetResourceVersion("1")
	return obj
}

// update changes a copy of old with change, defaults it, and updates old (or its
// status) with it; it returns the object, the errors and the warnings.
func (g *rig) update(version, subresource string, old *registry.Object, change func(obj map[string]any)) (*registry.Object, field.ErrorList, []string) {
	g.t.Helper()
	obj := old.DeepCopy()
	change(obj.Object)
	if err := g.r.Semantics.Default(version, obj); err != nil {
		g.t.Fatal(err)
	}
	w := &rigWarnings{}
	errs, err := g.r.Semantics.Update(warning.WithWarningRecorder(g.t.Context(), w), version, subresource, obj, old.DeepCopy())
	if err != nil {
		g.t.Fatal(err)
	}
	return obj, errs, w.texts
}

// rigSet sets the value at a dotted path of obj, creating maps on the way.
func rigSet(obj map[string]any, path string, value any) {
	keys := strings.Split(path, ".")
	if err := unstructured.SetNestedField(obj, value, keys...); err != nil {
		panic(err)
	}
}

// rigWantErrs checks that errs are exactly want, each "<field>: <type>" as kube
// reports them (e.g. "spec.cidrs[0]: Invalid value"), in any order.
func rigWantErrs(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Field+": "+e.Type.String())
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: errors %q, want %q\n(all: %v)", what, got, want, errs)
	}
}

// rigWant checks the value at a dotted path of obj (nil: absent), compared as JSON
// would be (numbers as int64).
func rigWant(t *testing.T, obj *registry.Object, path string, want any) {
	t.Helper()
	got, found, err := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		got = nil
	}
	if gj, wj := rigJSON(t, got), rigJSON(t, want); gj != wj {
		t.Errorf("%s: %s, want %s", path, gj, wj)
	}
}

func rigJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rigWantWarnings checks that warnings has one warning containing each of want, and
// no other.
func rigWantWarnings(t *testing.T, what string, warnings []string, want ...string) {
	t.Helper()
	if len(warnings) != len(want) {
		t.Errorf("%s: warnings %q, want %d containing %q", what, warnings, len(want), want)
		return
	}
	for i, w := range want {
		if !strings.Contains(warnings[i], w) {
			t.Errorf("%s: warning %q, want one containing %q", what, warnings[i], w)
		}
	}
}
