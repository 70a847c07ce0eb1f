package compatibility

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/concordproject/concord/catalog"
)

// TestAPIAvailabilityServiceCIDR reproduces the KEP's API availability examples with the
// API they were written about: ServiceCIDR (networking.k8s.io v1alpha1 1.27-1.33, v1beta1
// from 1.31, v1 from 1.33), on a build of 1.33 emulating 1.32.
func TestAPIAvailabilityServiceCIDR(t *testing.T) {
	gr := schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}
	tests := []struct {
		name               string
		runtimeConfig      []string
		forward, rcForward bool
		served             []string // servicecidrs versions
		storage            string
		err                string
	}{
		{name: "new beta APIs are off by default", served: nil},
		{name: "the beta is switched on", runtimeConfig: []string{"networking.k8s.io/v1beta1=true"}, served: []string{"v1beta1"}, storage: "v1beta1"},
		{name: "forward compatible: the GA version follows the beta", runtimeConfig: []string{"networking.k8s.io/v1beta1=true"}, forward: true,
			served: []string{"v1", "v1beta1"}, storage: "v1beta1"},
		{name: "forward compatible, an explicit false wins", runtimeConfig: []string{"networking.k8s.io/v1beta1=true", "networking.k8s.io/v1=false"}, forward: true,
			served: []string{"v1beta1"}, storage: "v1beta1"},
		{name: "forward compatible alone: nothing served to follow", forward: true, served: nil},
		{name: "the future GA version by name",
			runtimeConfig: []string{"networking.k8s.io/v1=true"},
			err:           "cannot enable version networking.k8s.io/v1 in runtime-config because all the resources have been introduced after the current version 1.32. Consider setting --runtime-config-emulation-forward-compatible=true"},
		{name: "the future GA resource by name",
			runtimeConfig: []string{"networking.k8s.io/v1/servicecidrs=true"},
			err:           "cannot enable resource networking.k8s.io/v1, Resource=servicecidrs in runtime-config because it is introduced at 1.33 after the current version 1.32. Consider setting --runtime-config-emulation-forward-compatible=true"},
		{name: "the future GA version by name, allowed", runtimeConfig: []string{"networking.k8s.io/v1=true"}, rcForward: true, served: []string{"v1"}, storage: "v1beta1"},
		{name: "the future GA resource by name, allowed", runtimeConfig: []string{"networking.k8s.io/v1/servicecidrs"}, rcForward: true, served: []string{"v1"}, storage: "v1beta1"},
		{name: "api/beta switches on what exists at the emulation version", runtimeConfig: []string{"api/beta=true"}, served: []string{"v1beta1"}, storage: "v1beta1"},
		{name: "api/beta is not a switch by name", runtimeConfig: []string{"api/beta=true"}, rcForward: true, served: []string{"v1beta1"}, storage: "v1beta1"},
		{name: "api/beta, forward compatible", runtimeConfig: []string{"api/beta=true"}, forward: true, served: []string{"v1", "v1beta1"}, storage: "v1beta1"},
		{name: "api/all without alpha", runtimeConfig: []string{"api/all=true", "api/alpha=false"}, served: []string{"v1beta1"}, storage: "v1beta1"},
		{name: "alpha is not forwarded, and not allowed with emulation",
			runtimeConfig: []string{"networking.k8s.io/v1alpha1=true"}, forward: true,
			err: "alpha APIs [networking.k8s.io/v1alpha1] cannot be enabled with emulation version 1.32, lower than the binary version 1.33: disable them in --runtime-config or emulate 1.33"},
		{name: "api/all includes alpha",
			runtimeConfig: []string{"api/all=true"},
			err: "alpha APIs [admissionregistration.k8s.io/v1alpha1 coordination.k8s.io/v1alpha2 internal.apiserver.k8s.io/v1alpha1 networking.k8s.io/v1alpha1 storagemigration.k8s.io/v1alpha1] " +
				"cannot be enabled with emulation version 1.32, lower than the binary version 1.33: disable them in --runtime-config or emulate 1.33\n" +
				"no storage version is readable by every release in the compatibility window: leasecandidates.coordination.k8s.io (window [1.31, 1.33]; " +
				"versions: v1beta1 introduced 1.33; v1alpha2 introduced 1.32; v1alpha1 introduced 1.31, removed 1.32); --min-compatibility-version 1.32 or later would allow one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{BinaryVersion: "1.33", EmulationVersion: []string{"1.32"}, RuntimeConfig: tt.runtimeConfig,
				EmulationForwardCompatible: tt.forward, RuntimeConfigEmulationForwardCompatible: tt.rcForward}
			cfg, err := o.Complete(testContext(t))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, gvr := range cfg.ServedResources() {
				if gvr.GroupResource() == gr {
					got = append(got, gvr.Version)
				}
			}
			if !slices.Equal(got, tt.served) {
				t.Errorf("served %v, want %v", got, tt.served)
			}
			if sv, _ := cfg.StorageVersion(gr); sv != tt.storage {
				t.Errorf("storage version %q, want %q", sv, tt.storage)
			}
		})
	}
}

// TestAPIAvailabilityForwardCompatible covers the forward-compatible modes on a group
// with several versions and two resources, one of which starts later (the shape of
// kube-apiserver's own tests, with lifecycles that respect the deprecation policy):
// widgets v1 1.20, v2alpha1 1.20-1.21, v2beta1 1.21-1.23, v2beta2 1.22-1.25, v2 1.23;
// gadgets v2beta2 1.22-1.25, v2 1.23; binary 1.23. "Lower priority" is Kubernetes-aware
// order: v2 > v1 > v2beta2 > v2beta1 > v2alpha1, so a GA version brings the newer GA
// versions, not the betas.
func TestAPIAvailabilityForwardCompatible(t *testing.T) {
	cat := newCatalog(t, "1.20", "1.23", []catalog.Resource{
		res("example.com", "widgets", "Widget", ver("v1", "1.20", ""), ver("v2alpha1", "1.20", "1.21"), ver("v2beta1", "1.21", "1.23"),
			ver("v2beta2", "1.22", "1.25"), ver("v2", "1.23", "")),
		res("example.com", "gadgets", "Gadget", ver("v2beta2", "1.22", "1.25"), ver("v2", "1.23", "")),
	}, nil)
	tests := []struct {
		name, emulation    string
		runtimeConfig      []string
		forward, rcForward bool
		served             []string
		err                string
	}{
		{name: "removed and future versions are not served", emulation: "1.21", runtimeConfig: []string{"api/beta=true", "example.com/v2beta1=true"},
			served: []string{"example.com/v1/widgets", "example.com/v2beta1/widgets"}},
		{name: "forward from GA brings the newer GA version", emulation: "1.20", forward: true,
			served: []string{"example.com/v1/widgets", "example.com/v2/widgets"}},
		{name: "forward from beta brings everything above it", emulation: "1.22", forward: true,
			served: []string{"example.com/v1/widgets", "example.com/v2/gadgets", "example.com/v2/widgets", "example.com/v2beta1/widgets", "example.com/v2beta2/gadgets", "example.com/v2beta2/widgets"}},
		{name: "future version by name", emulation: "1.20", runtimeConfig: []string{"example.com/v2beta2=true"},
			err: "cannot enable version example.com/v2beta2 in runtime-config because all the resources have been introduced after the current version 1.20. Consider setting --runtime-config-emulation-forward-compatible=true"},
		{name: "future resource by name", emulation: "1.20", runtimeConfig: []string{"example.com/v2beta2/gadgets=true"},
			err: "cannot enable resource example.com/v2beta2, Resource=gadgets in runtime-config because it is introduced at 1.22 after the current version 1.20. Consider setting --runtime-config-emulation-forward-compatible=true"},
		{name: "future version by name, allowed", emulation: "1.20", runtimeConfig: []string{"example.com/v2beta2=true"}, rcForward: true,
			served: []string{"example.com/v1/widgets", "example.com/v2beta2/gadgets", "example.com/v2beta2/widgets"}},
		{name: "future resource by name, allowed", emulation: "1.20", runtimeConfig: []string{"example.com/v2beta2/gadgets=true"}, rcForward: true,
			served: []string{"example.com/v1/widgets", "example.com/v2beta2/gadgets"}},
		{name: "future resource by name needs its own mode", emulation: "1.20", runtimeConfig: []string{"example.com/v2beta2/gadgets=true"}, forward: true,
			err: "cannot enable resource example.com/v2beta2, Resource=gadgets in runtime-config because it is introduced at 1.22 after the current version 1.20. Consider setting --runtime-config-emulation-forward-compatible=true"},
		{name: "both modes", emulation: "1.20", runtimeConfig: []string{"example.com/v2beta2=true"}, forward: true, rcForward: true,
			served: []string{"example.com/v1/widgets", "example.com/v2/gadgets", "example.com/v2/widgets", "example.com/v2beta2/gadgets", "example.com/v2beta2/widgets"}},
		{name: "forward, a version switched off by name stays off", emulation: "1.20", runtimeConfig: []string{"example.com/v2=false"}, forward: true,
			served: []string{"example.com/v1/widgets"}},
		{name: "forward, a resource switch wins over its version's", emulation: "1.20", runtimeConfig: []string{"example.com/v2=false", "example.com/v2/widgets=true"}, forward: true,
			served: []string{"example.com/v1/widgets", "example.com/v2/widgets"}},
		{name: "forward, api/beta=false applies to forwarded betas", emulation: "1.22", runtimeConfig: []string{"api/beta=false"}, forward: true,
			served: []string{"example.com/v1/widgets", "example.com/v2/widgets"}},
		{name: "forward, nothing served to follow", emulation: "1.20", runtimeConfig: []string{"example.com/v1=false"}, forward: true,
			served: nil},
		{name: "a removed resource by name", emulation: "1.23", runtimeConfig: []string{"example.com/v2beta1/widgets"},
			err: "cannot enable resource example.com/v2beta1, Resource=widgets in runtime-config because it was removed at 1.23, not after the current version 1.23"},
		{name: "the last item for a key wins", emulation: "1.22", runtimeConfig: []string{"example.com/v2beta2=false", "example.com/v2beta2=true,example.com/v1=false"},
			served: []string{"example.com/v2beta1/widgets", "example.com/v2beta2/gadgets", "example.com/v2beta2/widgets"}},
		{name: "the binary's own release", emulation: "1.23",
			served: []string{"example.com/v1/widgets", "example.com/v2/gadgets", "example.com/v2/widgets", "example.com/v2beta2/gadgets", "example.com/v2beta2/widgets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{Catalog: cat, EmulationVersion: []string{tt.emulation}, RuntimeConfig: tt.runtimeConfig,
				EmulationForwardCompatible: tt.forward, RuntimeConfigEmulationForwardCompatible: tt.rcForward}
			cfg, err := o.Complete(testContext(t))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := served(cfg); !slices.Equal(got, tt.served) {
				t.Errorf("served %v, want %v", got, tt.served)
			}
			// Whatever is served has a storage version every release of the window reads.
			for _, gvr := range cfg.ServedResources() {
				sv, ok := cfg.StorageVersion(gvr.GroupResource())
				r := cat.Resource(gvr.Group, gvr.Resource)
				if !ok {
					t.Fatalf("no storage version for served %s", gvr)
				}
				for _, rel := range cfg.Versions.Window() {
					if knows(r, rel) && !r.Version(sv).AvailableAt(rel) {
						t.Errorf("%s stored as %s, which %s cannot read", gvr.GroupResource(), sv, rel)
					}
				}
			}
		})
	}
}

// TestDefaultAPIs checks what the built-in catalog serves without flags, and the APIs
// Concord's features bring.
func TestDefaultAPIs(t *testing.T) {
	want := []string{
		"v1/configmaps",
		"v1/events",
		"v1/namespaces",
		"admissionregistration.k8s.io/v1/mutatingadmissionpolicies",
		"admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings",
		"admissionregistration.k8s.io/v1/validatingadmissionpolicies",
		"admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
		"autoscaling/v1/horizontalpodautoscalers",
		"autoscaling/v2/horizontalpodautoscalers",
		"batch/v1/cronjobs",
		"coordination.k8s.io/v1/leases",
		"events.k8s.io/v1/events",
		"flowcontrol.apiserver.k8s.io/v1/flowschemas",
		"flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
		"internal.apiserver.k8s.io/v1alpha1/storageversions", // brought by StorageVersionAPI
		"networking.k8s.io/v1/servicecidrs",
		"storagemigration.k8s.io/v1/storageversionmigrations",
	}
	cfg := complete(t, &Options{})
	if got := served(cfg); !slices.Equal(got, want) {
		t.Errorf("served:\n%v\nwant:\n%v", got, want)
	}

	storageVersions := schema.GroupVersionResource{Group: "internal.apiserver.k8s.io", Version: "v1alpha1", Resource: "storageversions"}
	// The StorageVersion API is as stable as its feature: no alpha error while emulating.
	cfg = complete(t, &Options{EmulationVersion: []string{"1.36"}})
	if !cfg.Served(storageVersions) {
		t.Error("storageversions not served at emulation 1.36")
	}
	// Without the feature the alpha API is off, like any other.
	cfg = complete(t, &Options{FeatureGates: []string{"StorageVersionAPI=false"}})
	if cfg.Served(storageVersions) {
		t.Error("storageversions served with StorageVersionAPI off")
	}
	// ... and may be switched on by hand.
	cfg = complete(t, &Options{FeatureGates: []string{"StorageVersionAPI=false"}, RuntimeConfig: []string{"internal.apiserver.k8s.io/v1alpha1"}})
	if !cfg.Served(storageVersions) {
		t.Error("storageversions not served when switched on")
	}

	got := errorLines(t, &Options{RuntimeConfig: []string{"internal.apiserver.k8s.io/v1alpha1=false", "coordination.k8s.io/v1/leases=false"}})
	wantErrs := []string{
		"feature gate APIServerIdentity is enabled, but requires API resources that are not served: leases.coordination.k8s.io; enable them with --runtime-config or disable the feature gate",
		"feature gate StorageVersionAPI is enabled, but requires API resources that are not served: storageversions.internal.apiserver.k8s.io; enable them with --runtime-config or disable the feature gate",
	}
	if !slices.Equal(got, wantErrs) {
		t.Errorf("errors = %q, want %q", got, wantErrs)
	}
}

// TestEventsByRelease checks which Events a build of every release the catalog
// describes serves by default, and where it stores them: core v1 Events in every
// release, events.k8s.io/v1 in every release (it came in 1.19), and events.k8s.io/v1beta1
// (a beta from before 1.24, so on by default) until its removal in 1.25. Each group
// stores its Events in its own GA version.
func TestEventsByRelease(t *testing.T) {
	core := schema.GroupResource{Resource: "events"}
	ev := schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	for _, r := range defaultCatalog(t).Releases() {
		t.Run(r.String(), func(t *testing.T) {
			cfg := complete(t, &Options{BinaryVersion: r.String()})
			var got []string
			for _, gvr := range cfg.ServedResources() {
				if gr := gvr.GroupResource(); gr == core || gr == ev {
					got = append(got, gvrString(gvr))
				}
			}
			want := []string{"v1/events", "events.k8s.io/v1/events"}
			if r.LessThan(rel("1.25")) {
				want = append(want, "events.k8s.io/v1beta1/events")
			}
			if !slices.Equal(got, want) {
				t.Errorf("served %v, want %v", got, want)
			}
			for _, gr := range []schema.GroupResource{core, ev} {
				if sv, ok := cfg.StorageVersion(gr); !ok || sv != "v1" {
					t.Errorf("%s stored in %q (%v), want v1", gr, sv, ok)
				}
			}
			// v1beta1 is served with kube-apiserver's warning once deprecated.
			rs, err := cfg.Resources()
			if err != nil {
				t.Fatal(err)
			}
			for _, res := range rs {
				if res.GroupResource() != ev {
					continue
				}
				v := res.Version("v1beta1")
				wantWarning := ""
				if !r.LessThan(rel("1.22")) {
					wantWarning = "events.k8s.io/v1beta1 Event is deprecated in v1.22+, unavailable in v1.25+"
				}
				if got := ptr.Deref(v.DeprecationWarning, ""); v.Deprecated != (wantWarning != "") || got != wantWarning {
					t.Errorf("v1beta1 deprecated %v, warning %q; want %q", v.Deprecated, got, wantWarning)
				}
			}
		})
	}
}

func TestStabilityOf(t *testing.T) {
	for name, want := range map[string]stability{"v1": ga, "v2": ga, "v1beta1": beta, "v2beta2": beta, "v1alpha1": alpha, "v10alpha3": alpha} {
		if got := stabilityOf(name); got != want {
			t.Errorf("stabilityOf(%s) = %s, want %s", name, got, want)
		}
	}
	on := &catalog.Version{Name: "v1beta1", Lifecycle: catalog.Lifecycle{Introduced: rel("1.23")}}
	off := &catalog.Version{Name: "v1beta1", Lifecycle: catalog.Lifecycle{Introduced: rel("1.24")}}
	if !servedByDefault(on) || servedByDefault(off) {
		t.Errorf("beta default: introduced 1.23 %v, 1.24 %v; want true, false", servedByDefault(on), servedByDefault(off))
	}
	if !strings.HasPrefix(gvrString(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}), "v1/") {
		t.Error("core group rendering")
	}
}
