package compatibility

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/concordproject/concord/catalog"
)

// TestDefaultAPIs checks what the built-in catalog serves without flags, and the APIs
// Concord's features bring.
func TestDefaultAPIs(t *testing.T) {
	want := []string{
		"v1/bindings",
		"v1/componentstatuses",
		"v1/configmaps",
		"v1/endpoints",
		"v1/events",
		"v1/limitranges",
		"v1/namespaces",
		"v1/nodes",
		"v1/persistentvolumeclaims",
		"v1/persistentvolumes",
		"v1/pods",
		"v1/podtemplates",
		"v1/replicationcontrollers",
		"v1/resourcequotas",
		"v1/secrets",
		"v1/serviceaccounts",
		"v1/services",
		"admissionregistration.k8s.io/v1/mutatingadmissionpolicies",
		"admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings",
		"admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
		"admissionregistration.k8s.io/v1/validatingadmissionpolicies",
		"admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
		"admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
		"apiregistration.k8s.io/v1/apiservices",
		"apps/v1/controllerrevisions", "apps/v1/daemonsets", "apps/v1/deployments", "apps/v1/replicasets", "apps/v1/statefulsets",
		"authentication.k8s.io/v1/selfsubjectreviews",
		"authentication.k8s.io/v1/tokenreviews",
		"authorization.k8s.io/v1/localsubjectaccessreviews",
		"authorization.k8s.io/v1/selfsubjectaccessreviews",
		"authorization.k8s.io/v1/selfsubjectrulesreviews",
		"authorization.k8s.io/v1/subjectaccessreviews",
		"autoscaling/v1/horizontalpodautoscalers",
		"autoscaling/v2/horizontalpodautoscalers",
		"batch/v1/cronjobs",
		"batch/v1/jobs",
		"certificates.k8s.io/v1/certificatesigningrequests",
		"certificates.k8s.io/v1/clustertrustbundles",
		"certificates.k8s.io/v1/podcertificaterequests",
		"coordination.k8s.io/v1/leases",
		"discovery.k8s.io/v1/endpointslices",
		"events.k8s.io/v1/events",
		"flowcontrol.apiserver.k8s.io/v1/flowschemas",
		"flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
		"internal.apiserver.k8s.io/v1alpha1/storageversions", // brought by StorageVersionAPI
		"networking.k8s.io/v1/ingressclasses",
		"networking.k8s.io/v1/ingresses",
		"networking.k8s.io/v1/ipaddresses",
		"networking.k8s.io/v1/networkpolicies",
		"networking.k8s.io/v1/servicecidrs",
		"node.k8s.io/v1/runtimeclasses",
		"policy/v1/poddisruptionbudgets",
		"rbac.authorization.k8s.io/v1/clusterrolebindings",
		"rbac.authorization.k8s.io/v1/clusterroles",
		"rbac.authorization.k8s.io/v1/rolebindings",
		"rbac.authorization.k8s.io/v1/roles",
		"resource.k8s.io/v1/deviceclasses",
		"resource.k8s.io/v1/devicetaintrules",
		"resource.k8s.io/v1/resourceclaims",
		"resource.k8s.io/v1/resourceclaimtemplates",
		"resource.k8s.io/v1/resourceslices",
		"scheduling.k8s.io/v1/priorityclasses",
		"storage.k8s.io/v1/csidrivers",
		"storage.k8s.io/v1/csinodes",
		"storage.k8s.io/v1/csistoragecapacities",
		"storage.k8s.io/v1/storageclasses",
		"storage.k8s.io/v1/volumeattachments",
		"storage.k8s.io/v1/volumeattributesclasses",
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

	// The MutatingAdmissionPolicy API is served by default only while its feature is on,
	// GA or not; --runtime-config may still switch it on.
	for _, tc := range []struct {
		opts Options
		want bool
	}{
		{Options{}, true},
		{Options{FeatureGates: []string{"MutatingAdmissionPolicy=false"}}, false},
		{Options{FeatureGates: []string{"MutatingAdmissionPolicy=false"}, RuntimeConfig: []string{"admissionregistration.k8s.io/v1/mutatingadmissionpolicies"}}, true},
	} {
		cfg = complete(t, &tc.opts)
		for _, r := range []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
			gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: r}
			if want := tc.want && (r == "mutatingadmissionpolicies" || tc.opts.RuntimeConfig == nil); cfg.Served(gvr) != want {
				t.Errorf("%+v: %s served = %v, want %v", tc.opts, gvr, !want, want)
			}
		}
		// The beta and alpha versions stay off by default either way.
		if cfg.Served(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1beta1", Resource: "mutatingadmissionpolicies"}) {
			t.Errorf("%+v: v1beta1 mutatingadmissionpolicies served", tc.opts)
		}
	}

	got := errorLines(t, &Options{RuntimeConfig: []string{"internal.apiserver.k8s.io/v1alpha1=false", "coordination.k8s.io/v1/leases=false"}})
	wantErrs := []string{
		"feature gate APIServerIdentity is enabled, but requires API resources that are not served: leases.coordination.k8s.io; add --feature-gates=APIServerIdentity=false to turn it off with them, or serve them with --runtime-config",
		"feature gate StorageVersionAPI is enabled, but requires API resources that are not served: storageversions.internal.apiserver.k8s.io; add --feature-gates=StorageVersionAPI=false to turn it off with them, or serve them with --runtime-config",
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
