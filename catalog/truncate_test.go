package catalog

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

func TestTruncateToBinaryVersionIsIdentity(t *testing.T) {
	c := mustDefault(t)
	same, err := c.Truncate(c.BinaryVersion())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Encode()
	b, err := same.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("Truncate(BinaryVersion()) changed the catalog")
	}
}

func TestTruncate(t *testing.T) {
	c := mustDefault(t)
	// versions returns name:introduced:deprecated:removed:replacement for every version of
	// a resource, or nil if the resource is gone.
	versions := func(c *Catalog, group, plural string) []string {
		r := c.Resource(group, plural)
		if r == nil {
			return nil
		}
		var out []string
		for _, v := range r.Versions {
			out = append(out, v.Name+":"+releaseString(v.Introduced)+":"+releaseString(v.Deprecated)+":"+releaseString(v.Removed)+":"+v.Replacement)
		}
		return out
	}

	for _, tc := range []struct {
		at     string
		group  string
		plural string
		want   []string
	}{
		// Versions introduced later are gone; a deprecation known at 1.25 keeps the
		// removal it announced.
		{"1.25", "flowcontrol.apiserver.k8s.io", "flowschemas", []string{"v1beta2:1.23:::", "v1beta1:1.20:1.23:1.26:"}},
		{"1.25", "autoscaling", "horizontalpodautoscalers", []string{"v2:1.23:::", "v1:1.2:::", "v2beta2:1.12:1.23:1.26:v2", "v2beta1:1.8:1.22:1.25:v2beta2"}},
		// Removed by 1.25, and still known (for decoding).
		{"1.25", "batch", "cronjobs", []string{"v1:1.21:::", "v1beta1:1.8:1.21:1.25:v1"}},
		// events.k8s.io/v1beta1: its deprecation in 1.22 is not known at 1.21; at 1.22
		// it brings the removal in 1.25. Core events are the same at every release.
		{"1.21", "events.k8s.io", "events", []string{"v1:1.19:::", "v1beta1:1.8:::"}},
		{"1.22", "events.k8s.io", "events", []string{"v1:1.19:::", "v1beta1:1.8:1.22:1.25:"}},
		{"1.20", "", "events", []string{"v1:1.0:::"}},
		// Introduced after 1.25: the whole resource is gone.
		{"1.25", "networking.k8s.io", "servicecidrs", nil},
		// The v1alpha1 deprecation (1.33) and removal (1.35) are not known yet at 1.31.
		{"1.31", "storagemigration.k8s.io", "storageversionmigrations", []string{"v1alpha1:1.30:::"}},
		// Deprecated at 1.30: the planned removal stays known.
		{"1.31", "networking.k8s.io", "servicecidrs", []string{"v1beta1:1.31:::", "v1alpha1:1.27:1.30:1.33:"}},
		// v1beta3's deprecation in 1.29, and with it its replacement, is not known at 1.28.
		{"1.28", "flowcontrol.apiserver.k8s.io", "flowschemas", []string{"v1beta3:1.26:::", "v1beta2:1.23:1.26:1.29:v1beta3", "v1beta1:1.20:1.23:1.26:v1beta3"}},
		{"1.20", "flowcontrol.apiserver.k8s.io", "flowschemas", []string{"v1beta1:1.20:::"}},
	} {
		tr, err := c.Truncate(version.MustParse(tc.at))
		if err != nil {
			t.Fatalf("Truncate(%s): %v", tc.at, err)
		}
		if got := versions(tr, tc.group, tc.plural); !slices.Equal(got, tc.want) {
			t.Errorf("at %s, %s.%s versions = %q, want %q", tc.at, tc.plural, tc.group, got, tc.want)
		}
	}

	tr, err := c.Truncate(version.MustParse("1.30.4")) // patch releases count as their minor
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.BinaryVersion().String(); got != "1.30" {
		t.Errorf("BinaryVersion after Truncate(1.30.4) = %s", got)
	}
	gates := tr.FeatureGates()
	if s := gates["StorageVersionAPI"]; len(s) != 1 {
		t.Errorf("StorageVersionAPI at 1.30 has specs %v, want only the alpha one", s)
	}
	if _, ok := gates["MutatingAdmissionPolicy"]; ok {
		t.Error("MutatingAdmissionPolicy (alpha in 1.32) is known at 1.30")
	}
	if s := gates["CRDValidationRatcheting"]; len(s) != 2 {
		t.Errorf("CRDValidationRatcheting at 1.30 has specs %v, want the alpha and beta ones", s)
	}
	// The truncated catalog is itself a valid catalog.
	data, err := tr.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(data); err != nil {
		t.Errorf("truncated catalog does not parse: %v", err)
	}
	// The original is untouched.
	if c.BinaryVersion().String() != "1.37" || c.Resource("networking.k8s.io", "servicecidrs") == nil {
		t.Error("Truncate changed the original catalog")
	}
}

func TestTruncateUnknownRelease(t *testing.T) {
	c := mustDefault(t)
	for _, v := range []*version.Version{nil, version.MajorMinor(1, 19), version.MajorMinor(1, 38), version.MajorMinor(2, 0)} {
		if _, err := c.Truncate(v); !errors.Is(err, ErrUnknownRelease) {
			t.Errorf("Truncate(%v) error = %v, want ErrUnknownRelease", v, err)
		}
	}
	_, err := c.Truncate(version.MajorMinor(1, 38))
	if want := "release not in the API catalog: 1.38 is not one of the releases 1.20 to 1.37 the API catalog describes"; err == nil || err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

// Truncating to one release twice gives the same catalog (patch releases count as
// their minor), so that servers of one release share its Versions and what is
// compiled from them: their schemas and the resources' converters.
func TestTruncateOncePerRelease(t *testing.T) {
	c := mustDefault(t)
	rel := c.Releases()[len(c.Releases())-2]
	a, err := c.Truncate(rel)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Truncate(version.MustParseGeneric(rel.String() + ".7"))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("Truncate(%s) made two catalogs", rel)
	}
	r := a.Resources()[0]
	sel := Selection{StorageVersion: r.Versions[len(r.Versions)-1].Name}
	x, err := r.RegistryResource(sel)
	if err != nil {
		t.Fatal(err)
	}
	y, err := r.RegistryResource(sel)
	if err != nil {
		t.Fatal(err)
	}
	if x.Converter != y.Converter || !sameCompiled(t, x.Versions[0].Compiled, y.Versions[0].Compiled) {
		t.Error("two registry resources of one catalog resource do not share its converter and compiled schemas")
	}
}
