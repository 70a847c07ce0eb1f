package compatibility

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/concordproject/concord/catalog"
)

// rel parses a release such as "1.30".
func rel(s string) *version.Version { return version.MustParse(s) }

// releases returns the releases from..to, inclusive.
func releases(from, to string) []*version.Version {
	var out []*version.Version
	for r := rel(from); !r.GreaterThan(rel(to)); r = r.AddMinor(1) {
		out = append(out, r)
	}
	return out
}

// ver is a catalog version introduced at introduced and removed at removed ("" for
// never). A version removed after the catalog's newest release must be deprecated: use
// deprecated.
func ver(name, introduced, removed string) catalog.Version {
	v := catalog.Version{Name: name, Lifecycle: catalog.Lifecycle{Introduced: rel(introduced)}}
	if removed != "" {
		v.Removed = rel(removed)
		v.Deprecated = rel(introduced)
	}
	return v
}

// res is a cluster-scoped catalog resource of group with versions.
func res(group, plural, kind string, versions ...catalog.Version) catalog.Resource {
	r := catalog.Resource{Group: group, Versions: versions}
	r.Names.Plural, r.Names.Kind = plural, kind
	return r
}

// ownGates are Concord's gates, GA and off since from: present, as Complete requires,
// and out of the way (AllAlpha and AllBeta do not touch GA gates).
func ownGates(from string) map[featuregate.Feature]featuregate.VersionedSpecs {
	return map[featuregate.Feature]featuregate.VersionedSpecs{
		APIServerIdentity: {{Version: rel(from), Default: false, PreRelease: featuregate.GA}},
		StorageVersionAPI: {{Version: rel(from), Default: false, PreRelease: featuregate.GA}},
	}
}

// newCatalog builds a synthetic catalog of releases from..to with resources, Concord's
// gates (off) and gates.
func newCatalog(t testing.TB, from, to string, resources []catalog.Resource, gates map[featuregate.Feature]featuregate.VersionedSpecs) *catalog.Catalog {
	t.Helper()
	all := ownGates(from)
	maps.Copy(all, gates)
	c, err := catalog.New(releases(from, to), resources, all)
	if err != nil {
		t.Fatalf("catalog.New: %v", err)
	}
	return c
}

// defaultCatalog returns the built-in catalog.
func defaultCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatalf("catalog.Default: %v", err)
	}
	return c
}

// testContext is t.Context() with a logger that writes to the test's log.
func testContext(t *testing.T) context.Context {
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	return klog.NewContext(t.Context(), logger)
}

// complete resolves o, failing the test on an error.
func complete(t *testing.T, o *Options) *Config {
	t.Helper()
	cfg, err := o.Complete(testContext(t))
	if err != nil {
		t.Fatalf("Complete(%+v):\n%v", *o, err)
	}
	return cfg
}

// errorLines resolves o and returns its error's lines (nil if it succeeds).
func errorLines(t *testing.T, o *Options) []string {
	t.Helper()
	_, err := o.Complete(testContext(t))
	if err == nil {
		return nil
	}
	if v := o.Validate(); v == nil || v.Error() != err.Error() {
		t.Errorf("Validate() = %v, want the error of Complete", v)
	}
	return strings.Split(err.Error(), "\n")
}

// served returns the served versions of every resource, as "group/version/resource"
// ("v1/configmaps" for the core group), sorted.
func served(cfg *Config) []string {
	var out []string
	for _, gvr := range cfg.ServedResources() {
		out = append(out, gvrString(gvr))
	}
	return out
}

func gvrString(gvr schema.GroupVersionResource) string {
	return strings.TrimPrefix(gvr.Group+"/"+gvr.Version+"/"+gvr.Resource, "/")
}

// unwrapAll flattens joined errors.
func unwrapAll(err error) []error {
	var u interface{ Unwrap() []error }
	if errors.As(err, &u) {
		return slices.Clone(u.Unwrap())
	}
	return []error{err}
}
