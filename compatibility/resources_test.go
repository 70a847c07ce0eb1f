package compatibility

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	kubeversion "k8s.io/apimachinery/pkg/version"
)

// at returns the versions of a build of release r, emulating it, compatible with r-1.
func at(r string) Versions {
	return Versions{Binary: rel(r), Emulation: rel(r), MinCompatibility: subtractMinor(rel(r), 1)}
}

// TestStorageVersionUpstreamTable reproduces kube-apiserver's storage version test
// expectations (binary = emulation, minimum compatibility = emulation-1) with the KEP
// rule's answers. The upstream column is what kube-apiserver answers; Concord implements
// the KEP, and the two differ where upstream prefers a version introduced at the
// emulation version that the previous release cannot read.
func TestStorageVersionUpstreamTable(t *testing.T) {
	cat := defaultCatalog(t)
	// LeaseCandidate as kube-apiserver's test describes it (v1alpha2 from 1.31, v1beta1
	// from 1.33); the built-in catalog has its real history, tested below.
	upstreamLeaseCandidate := res("coordination.k8s.io", "leasecandidates", "LeaseCandidate",
		ver("v1beta1", "1.33", ""), ver("v1alpha2", "1.31", ""))
	lcCatalog := newCatalog(t, "1.30", "1.33", []catalog.Resource{upstreamLeaseCandidate}, nil)

	tests := []struct {
		name     string
		resource *catalog.Resource
		at       string
		upstream string
		kep      string
	}{
		{"FlowSchema, v1beta2 new at 1.23", cat.Resource("flowcontrol.apiserver.k8s.io", "flowschemas"), "1.23", "v1beta1", "v1beta1"},
		{"FlowSchema, v1 new at 1.29", cat.Resource("flowcontrol.apiserver.k8s.io", "flowschemas"), "1.29", "v1beta3", "v1beta3"},
		{"FlowSchema at 1.30", cat.Resource("flowcontrol.apiserver.k8s.io", "flowschemas"), "1.30", "v1", "v1"},
		{"ValidatingAdmissionPolicy, v1 new at 1.30", cat.Resource("admissionregistration.k8s.io", "validatingadmissionpolicies"), "1.30", "v1beta1", "v1beta1"},
		{"LeaseCandidate, v1beta1 new at 1.33", lcCatalog.Resource("coordination.k8s.io", "leasecandidates"), "1.33", "v1beta1", "v1alpha2"},
		{"LeaseCandidate at 1.32", lcCatalog.Resource("coordination.k8s.io", "leasecandidates"), "1.32", "v1alpha2", "v1alpha2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StorageVersion(tt.resource, at(tt.at))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.kep {
				t.Errorf("storage version %s, want %s (kube-apiserver: %s)", got, tt.kep, tt.upstream)
			}
		})
	}
}

// TestStorageVersionProperty checks, on random catalogs and every valid (emulation,
// minimum compatibility), that the storage version of every resource is readable by
// every release of [minCompatibility, emulation+1] that knows the resource, that no
// newer version would be, and that an error means no version is.
func TestStorageVersionProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(4330, 1))
	checked := 0
	for range 300 {
		cat := randomCatalog(t, rng)
		floor, binary := Floor(cat), cat.BinaryVersion()
		for e := floor; !e.GreaterThan(binary); e = e.AddMinor(1) {
			for m := floor; !m.GreaterThan(e); m = m.AddMinor(1) {
				v := Versions{Binary: binary, Emulation: e, MinCompatibility: m}
				for _, r := range cat.Resources() {
					checkStorageVersion(t, r, v)
					checked++
				}
			}
		}
	}
	t.Logf("%d decisions checked", checked)
}

func checkStorageVersion(t *testing.T, r *catalog.Resource, v Versions) {
	t.Helper()
	var constraining []*version.Version
	for _, rel := range v.Window() {
		if knows(r, rel) {
			constraining = append(constraining, rel)
		}
	}
	if len(constraining) == 0 {
		constraining = []*version.Version{v.Binary}
	}
	readable := func(name string) bool {
		for _, rel := range constraining {
			if !r.Version(name).AvailableAt(rel) {
				return false
			}
		}
		return true
	}
	sv, err := StorageVersion(r, v)
	if err != nil {
		for _, ver := range r.Versions {
			if readable(ver.Name) {
				t.Fatalf("%s at %s: error %v, but %s is readable by %v", r.GroupResource(), v, err, ver.Name, constraining)
			}
		}
		return
	}
	if !readable(sv) {
		t.Fatalf("%s at %s: stored as %s, which one of %v cannot read", r.GroupResource(), v, sv, constraining)
	}
	for _, ver := range r.Versions {
		if kubeversion.CompareKubeAwareVersionStrings(ver.Name, sv) > 0 && readable(ver.Name) {
			t.Fatalf("%s at %s: stored as %s, but the newer %s is readable too", r.GroupResource(), v, sv, ver.Name)
		}
	}
}

// randomCatalog returns a valid catalog of 4 to 9 releases and up to 5 resources with
// random version names and lifecycles, removals past the newest release included.
func randomCatalog(t *testing.T, rng *rand.Rand) *catalog.Catalog {
	t.Helper()
	names := []string{"v1", "v2", "v3", "v1beta1", "v1beta2", "v2beta1", "v1alpha1", "v1alpha2", "v2alpha1"}
	first := 20 + rng.IntN(5)
	last := first + 3 + rng.IntN(6)
	var resources []catalog.Resource
	for i := range 1 + rng.IntN(5) {
		var versions []catalog.Version
		for _, j := range rng.Perm(len(names))[:1+rng.IntN(4)] {
			intro := first - 2 + rng.IntN(last-first+3)
			removed := ""
			if rng.IntN(2) == 0 {
				removed = fmt.Sprintf("1.%d", intro+1+rng.IntN(5))
			}
			versions = append(versions, ver(names[j], fmt.Sprintf("1.%d", min(intro, last)), removed))
		}
		resources = append(resources, res("example.com", fmt.Sprintf("r%ds", i), fmt.Sprintf("R%d", i), versions...))
	}
	cat, err := catalog.New(releases(fmt.Sprintf("1.%d", first), fmt.Sprintf("1.%d", last)), resources, ownGates(fmt.Sprintf("1.%d", first)))
	if err != nil {
		t.Fatalf("random catalog: %v", err)
	}
	return cat
}

// TestConfigProperty checks the same property end to end: on random catalogs, with every
// API switched on, whatever Complete accepts stores each served resource in a version
// every release of the window that knows it can read, and what it refuses names a
// resource without one.
func TestConfigProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(4330, 2))
	accepted := 0
	for range 200 {
		cat := randomCatalog(t, rng)
		floor, binary := Floor(cat), cat.BinaryVersion()
		e := floor.AddMinor(uint(rng.IntN(int(binary.Minor()-floor.Minor()) + 1)))
		m := floor.AddMinor(uint(rng.IntN(int(e.Minor()-floor.Minor()) + 1)))
		o := &Options{Catalog: cat, EmulationVersion: []string{e.String()}, MinCompatibilityVersion: []string{m.String()},
			RuntimeConfig: []string{"api/all=true"}}
		if e.LessThan(binary) {
			o.RuntimeConfig = append(o.RuntimeConfig, "api/alpha=false")
		}
		cfg, err := o.Complete(testContext(t))
		if err != nil {
			for _, e := range unwrapAll(err) {
				if !errors.Is(e, ErrNoStorageVersion) {
					t.Fatalf("unexpected error: %v", e)
				}
			}
			continue
		}
		accepted++
		for _, gvr := range cfg.ServedResources() {
			sv, ok := cfg.StorageVersion(gvr.GroupResource())
			if !ok {
				t.Fatalf("served %s without a storage version", gvr)
			}
			r := cat.Resource(gvr.Group, gvr.Resource)
			if want, err := StorageVersion(r, cfg.Versions); err != nil || want != sv {
				t.Fatalf("%s stored as %s, StorageVersion says %s, %v", gvr.GroupResource(), sv, want, err)
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no random configuration was accepted")
	}
}

// TestConfigResources checks the registry resources: every known version decodable,
// served flags, storage version, hooks, deprecation at the emulation version.
func TestConfigResources(t *testing.T) {
	get := func(rs []*registry.Resource, gr schema.GroupResource) *registry.Resource {
		for _, r := range rs {
			if r.GroupResource() == gr {
				return r
			}
		}
		return nil
	}
	map_ := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}

	cfg := complete(t, &Options{EmulationVersion: []string{"1.36"}})
	rs, err := cfg.Resources()
	if err != nil {
		t.Fatal(err)
	}
	r := get(rs, map_)
	if r == nil {
		t.Fatal("mutatingadmissionpolicies not built")
	}
	if got := r.DecodableVersions(); !slices.Equal(got, []string{"v1", "v1beta1", "v1alpha1"}) {
		t.Errorf("decodable versions %v", got)
	}
	if got := r.ServedVersions(); !slices.Equal(got, []string{"v1"}) {
		t.Errorf("served versions %v", got)
	}
	if r.StorageVersion != "v1beta1" {
		t.Errorf("storage version %s, want v1beta1", r.StorageVersion)
	}
	if v := r.Version("v1alpha1"); !v.Deprecated || !strings.Contains(*v.DeprecationWarning, "deprecated in v1.35+") {
		t.Errorf("v1alpha1 deprecation at 1.36: %v", v.Deprecated)
	}
	if v := r.Version("v1beta1"); v.Deprecated {
		t.Error("v1beta1 is deprecated only from 1.37")
	}
	if get(rs, schema.GroupResource{Group: "coordination.k8s.io", Resource: "leasecandidates"}) != nil {
		t.Error("a resource served in no version was built")
	}
	hash136 := r.StorageVersionHash()

	rs, err = Resources(defaultCatalog(t), Default(defaultCatalog(t).BinaryVersion()))
	if err != nil {
		t.Fatal(err)
	}
	r = get(rs, map_)
	if r.StorageVersion != "v1" || r.StorageVersionHash() == hash136 {
		t.Errorf("at 1.37: storage version %s, hash %s (1.36: %s)", r.StorageVersion, r.StorageVersionHash(), hash136)
	}
	if _, err := Resources(defaultCatalog(t), Default(rel("1.30"))); err == nil {
		t.Error("Resources accepted versions of another binary")
	}
}
