package compatibility

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	_ "k8s.io/kubernetes/pkg/features" // kube's gates, for TestKubeGates

	"github.com/concordproject/concord/catalog"
)

// gridCatalog is a binary of release N = 1.31 whose gates and APIs make each transition
// of the KEP's integration test grid between N-1 and N, one group per API row.
func gridCatalog(t testing.TB) *catalog.Catalog {
	return newCatalog(t, "1.28", "1.31",
		[]catalog.Resource{
			res("alpha.example.com", "alphanews", "AlphaNew", ver("v1alpha1", "1.31", "")),
			res("alpha.example.com", "alphaolds", "AlphaOld", ver("v1alpha1", "1.29", "")),
			res("graduated.example.com", "graduates", "Graduate", ver("v1", "1.31", ""), ver("v1beta1", "1.29", "")),
			res("removed.example.com", "betaremoveds", "BetaRemoved", ver("v1beta1", "1.28", "1.31")),
			res("onremoved.example.com", "onremoveds", "OnRemoved", ver("v1beta1", "1.22", "1.31")),
			res("storage.example.com", "storagechanges", "StorageChange", ver("v1", "1.30", ""), ver("v1beta1", "1.22", "")),
		},
		map[featuregate.Feature]featuregate.VersionedSpecs{
			"AlphaNew": {{Version: rel("1.31"), Default: false, PreRelease: featuregate.Alpha}},
			"AlphaToBeta": {
				{Version: rel("1.30"), Default: false, PreRelease: featuregate.Alpha},
				{Version: rel("1.31"), Default: true, PreRelease: featuregate.Beta},
			},
			"BetaToGA": {
				{Version: rel("1.29"), Default: true, PreRelease: featuregate.Beta},
				{Version: rel("1.31"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
			},
			// Kubernetes removes a gate by deprecating it and locking it off.
			"BetaRemoved": {
				{Version: rel("1.29"), Default: true, PreRelease: featuregate.Beta},
				{Version: rel("1.31"), Default: false, PreRelease: featuregate.Deprecated, LockToDefault: true},
			},
		})
}

// TestKEPIntegrationGrid checks, row by row, the transitions of KEP-4330's integration
// test grid at emulation version N-1 (1.30) and N (1.31, the binary version). The CEL
// rows (a function new at N is only in the StoredExpressions environment below N) are
// not about gates: CEL environments follow the minimum compatibility version, and are
// tested where CRD rules are compiled (package apiextensions) and end to end
// (TestCELEnvironmentFollowsMinCompatibility in test/integration).
//
// One cell differs from the grid: an alpha feature graduating to beta at N is, at N-1,
// alpha, and Concord follows the KEP's rule that alpha features cannot be used with an
// emulation version (the grid says it can be switched on there).
func TestKEPIntegrationGrid(t *testing.T) {
	cat := gridCatalog(t)
	const alphaAt130 = "alpha features [%s] cannot be enabled with emulation version 1.30, lower than the binary version 1.31: disable them or emulate 1.31"

	t.Run("features", func(t *testing.T) {
		tests := []struct {
			row, feature, emulation string
			set                     string // "", "true" or "false"
			enabled                 bool
			err                     string
		}{
			{"alpha feature introduced", "AlphaNew", "1.30", "", false, ""},
			{"alpha feature introduced", "AlphaNew", "1.30", "true", false, "cannot set feature gate AlphaNew to true, feature is PreAlpha at emulated version 1.30, min compatibility version 1.29"},
			{"alpha feature introduced", "AlphaNew", "1.30", "false", false, "cannot set feature gate AlphaNew to false, feature is PreAlpha at emulated version 1.30, min compatibility version 1.29"},
			{"alpha feature introduced", "AlphaNew", "1.31", "", false, ""},
			{"alpha feature introduced", "AlphaNew", "1.31", "true", true, ""},

			{"alpha feature graduated to beta", "AlphaToBeta", "1.30", "", false, ""},
			{"alpha feature graduated to beta", "AlphaToBeta", "1.30", "true", false, strings.Replace(alphaAt130, "%s", "AlphaToBeta", 1)},
			{"alpha feature graduated to beta", "AlphaToBeta", "1.31", "", true, ""},
			{"alpha feature graduated to beta", "AlphaToBeta", "1.31", "false", false, ""},

			{"beta feature graduated to GA", "BetaToGA", "1.30", "", true, ""},
			{"beta feature graduated to GA", "BetaToGA", "1.30", "false", false, ""},
			{"beta feature graduated to GA", "BetaToGA", "1.31", "", true, ""},
			{"beta feature graduated to GA", "BetaToGA", "1.31", "true", true, ""},
			{"beta feature graduated to GA", "BetaToGA", "1.31", "false", false, "cannot set feature gate BetaToGA to false, feature is locked to true"},

			{"beta feature removed", "BetaRemoved", "1.30", "", true, ""},
			{"beta feature removed", "BetaRemoved", "1.30", "false", false, ""},
			{"beta feature removed", "BetaRemoved", "1.31", "", false, ""},
			{"beta feature removed", "BetaRemoved", "1.31", "true", false, "cannot set feature gate BetaRemoved to true, feature is locked to false"},
		}
		for _, tt := range tests {
			t.Run(tt.row+"/"+tt.emulation+"/"+tt.set, func(t *testing.T) {
				o := &Options{Catalog: cat, EmulationVersion: []string{tt.emulation}}
				if tt.set != "" {
					o.FeatureGates = []string{tt.feature + "=" + tt.set}
				}
				cfg, err := o.Complete(testContext(t))
				switch {
				case tt.err != "":
					if err == nil || err.Error() != tt.err {
						t.Fatalf("error = %v, want %q", err, tt.err)
					}
				case err != nil:
					t.Fatal(err)
				case cfg.Enabled(featuregate.Feature(tt.feature)) != tt.enabled:
					t.Errorf("Enabled(%s) = %v, want %v", tt.feature, !tt.enabled, tt.enabled)
				}
			})
		}
	})

	t.Run("APIs", func(t *testing.T) {
		tests := []struct {
			row, emulation string
			runtimeConfig  string
			served         []string // of the row's group
			group          string
			err            string
		}{
			{row: "alpha API introduced", emulation: "1.30", group: "alpha.example.com", served: nil},
			{row: "alpha API introduced", emulation: "1.30", group: "alpha.example.com", runtimeConfig: "alpha.example.com/v1alpha1/alphanews=true",
				err: "cannot enable resource alpha.example.com/v1alpha1, Resource=alphanews in runtime-config because it is introduced at 1.31 after the current version 1.30. Consider setting --runtime-config-emulation-forward-compatible=true"},
			{row: "alpha API introduced", emulation: "1.30", group: "alpha.example.com", runtimeConfig: "alpha.example.com/v1alpha1=true",
				err: "alpha APIs [alpha.example.com/v1alpha1] cannot be enabled with emulation version 1.30, lower than the binary version 1.31: disable them in --runtime-config or emulate 1.31"},
			{row: "alpha API introduced", emulation: "1.31", group: "alpha.example.com", served: nil},
			{row: "alpha API introduced", emulation: "1.31", group: "alpha.example.com", runtimeConfig: "alpha.example.com/v1alpha1=true",
				served: []string{"alpha.example.com/v1alpha1/alphanews", "alpha.example.com/v1alpha1/alphaolds"}},

			{row: "beta API graduated to GA", emulation: "1.30", group: "graduated.example.com", served: nil},
			{row: "beta API graduated to GA", emulation: "1.30", group: "graduated.example.com", runtimeConfig: "graduated.example.com/v1beta1=true",
				served: []string{"graduated.example.com/v1beta1/graduates"}},
			{row: "beta API graduated to GA", emulation: "1.31", group: "graduated.example.com",
				served: []string{"graduated.example.com/v1/graduates"}},

			{row: "beta API removed", emulation: "1.30", group: "removed.example.com", served: nil},
			{row: "beta API removed", emulation: "1.30", group: "removed.example.com", runtimeConfig: "removed.example.com/v1beta1=true",
				served: []string{"removed.example.com/v1beta1/betaremoveds"}},
			{row: "beta API removed", emulation: "1.31", group: "removed.example.com", served: nil},
			{row: "beta API removed", emulation: "1.31", group: "removed.example.com", runtimeConfig: "removed.example.com/v1beta1=true",
				err: "cannot enable version removed.example.com/v1beta1 in runtime-config because all its resources were removed at or before the current version 1.31"},

			{row: "on-by-default beta API removed", emulation: "1.30", group: "onremoved.example.com",
				served: []string{"onremoved.example.com/v1beta1/onremoveds"}},
			{row: "on-by-default beta API removed", emulation: "1.30", group: "onremoved.example.com", runtimeConfig: "onremoved.example.com/v1beta1=false", served: nil},
			{row: "on-by-default beta API removed", emulation: "1.31", group: "onremoved.example.com", served: nil},
		}
		for _, tt := range tests {
			t.Run(tt.row+"/"+tt.emulation+"/"+tt.runtimeConfig, func(t *testing.T) {
				o := &Options{Catalog: cat, EmulationVersion: []string{tt.emulation}}
				if tt.runtimeConfig != "" {
					o.RuntimeConfig = []string{tt.runtimeConfig}
				}
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
				for _, s := range served(cfg) {
					if strings.HasPrefix(s, tt.group+"/") {
						got = append(got, s)
					}
				}
				if !slices.Equal(got, tt.served) {
					t.Errorf("served %v, want %v", got, tt.served)
				}
			})
		}
	})

	t.Run("storage version changed", func(t *testing.T) {
		gr := schema.GroupResource{Group: "storage.example.com", Resource: "storagechanges"}
		for emulation, want := range map[string]string{"1.30": "v1beta1", "1.31": "v1"} {
			cfg := complete(t, &Options{Catalog: cat, EmulationVersion: []string{emulation}})
			if sv, _ := cfg.StorageVersion(gr); sv != want {
				t.Errorf("at %s: stored as %q, want %s", emulation, sv, want)
			}
		}
	})
}

// TestFeatureResolution covers what the grid does not: minimum compatibility versions in
// specs, AllAlpha and AllBeta, deprecated gates, and the real catalog's transitions.
func TestFeatureResolution(t *testing.T) {
	compat := newCatalog(t, "1.28", "1.31", nil, map[featuregate.Feature]featuregate.VersionedSpecs{
		// On by default at 1.30 only once every server is at least 1.30.
		"SkewSensitive": {
			{Version: rel("1.30"), Default: false, PreRelease: featuregate.Beta},
			{Version: rel("1.30"), Default: true, PreRelease: featuregate.Beta, MinCompatibilityVersion: rel("1.30")},
			{Version: rel("1.31"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
		},
		// Deprecated and off by default, not locked (KMSv1 in Kubernetes 1.29).
		"DeprecatedOff": {
			{Version: rel("1.28"), Default: true, PreRelease: featuregate.GA},
			{Version: rel("1.30"), Default: false, PreRelease: featuregate.Deprecated},
		},
	})
	grid := gridCatalog(t)

	tests := []struct {
		name          string
		opts          Options
		enabled       []featuregate.Feature
		disabled      []featuregate.Feature
		wantErrSubstr string
	}{
		{name: "min compatibility below a spec's: the older spec applies",
			opts:     Options{Catalog: compat, EmulationVersion: []string{"1.30"}},
			disabled: []featuregate.Feature{"SkewSensitive"}},
		{name: "min compatibility reaches the spec's",
			opts:    Options{Catalog: compat, EmulationVersion: []string{"1.30"}, MinCompatibilityVersion: []string{"1.30"}},
			enabled: []featuregate.Feature{"SkewSensitive"}},
		{name: "a later spec inherits the minimum compatibility version",
			opts:    Options{Catalog: compat},
			enabled: []featuregate.Feature{"SkewSensitive"}},
		{name: "inherited: a low min compatibility selects the beta spec even past GA",
			opts:     Options{Catalog: compat, MinCompatibilityVersion: []string{"1.29"}},
			disabled: []featuregate.Feature{"SkewSensitive"}},
		{name: "and there the beta gate may be set",
			opts:    Options{Catalog: compat, MinCompatibilityVersion: []string{"1.29"}, FeatureGates: []string{"SkewSensitive=true"}},
			enabled: []featuregate.Feature{"SkewSensitive"}},

		{name: "AllAlpha sets the alpha features not set explicitly",
			opts:     Options{Catalog: grid, FeatureGates: []string{"AllAlpha=true"}},
			enabled:  []featuregate.Feature{"AlphaNew", "AlphaToBeta", "BetaToGA"},
			disabled: []featuregate.Feature{"BetaRemoved"}},
		{name: "AllAlpha, an explicit value wins",
			opts:     Options{Catalog: grid, FeatureGates: []string{"AllAlpha=true", "AlphaNew=false"}},
			disabled: []featuregate.Feature{"AlphaNew"}},
		{name: "AllBeta=false touches beta features only",
			opts:     Options{Catalog: grid, FeatureGates: []string{"AllBeta=false"}},
			enabled:  []featuregate.Feature{"BetaToGA"},
			disabled: []featuregate.Feature{"AlphaToBeta", "AlphaNew"}},
		{name: "AllBeta at the emulation version's stages",
			opts:     Options{Catalog: grid, EmulationVersion: []string{"1.30"}, FeatureGates: []string{"AllBeta=false"}},
			disabled: []featuregate.Feature{"BetaToGA", "BetaRemoved", "AlphaToBeta"}},
		{name: "AllAlpha with an emulation version is the alpha rule",
			opts:          Options{Catalog: grid, EmulationVersion: []string{"1.30"}, FeatureGates: []string{"AllAlpha=true"}},
			wantErrSubstr: "alpha features [AlphaToBeta] cannot be enabled with emulation version 1.30"},

		{name: "a deprecated gate is off by default",
			opts:     Options{Catalog: compat},
			disabled: []featuregate.Feature{"DeprecatedOff"}},
		{name: "a deprecated gate may still be switched on",
			opts:    Options{Catalog: compat, FeatureGates: []string{"DeprecatedOff=true"}},
			enabled: []featuregate.Feature{"DeprecatedOff"}},

		{name: "real: Concord's gates on by default",
			opts:    Options{},
			enabled: []featuregate.Feature{StorageVersionAPI, APIServerIdentity, CRDValidationRatcheting, MutatingAdmissionPolicy, WatchList}},
		{name: "real: gates of features Concord does not have are not listed",
			opts:          Options{FeatureGates: []string{"KMSv1=true"}},
			wantErrSubstr: "unrecognized feature gate: KMSv1"},
		{name: "real: CRDValidationRatcheting may be switched off while beta",
			opts:     Options{BinaryVersion: "1.32", FeatureGates: []string{"CRDValidationRatcheting=false"}},
			disabled: []featuregate.Feature{CRDValidationRatcheting}},
		{name: "real: a gate the release does not know is disabled",
			opts:     Options{BinaryVersion: "1.31"},
			disabled: []featuregate.Feature{MutatingAdmissionPolicy, WatchList}, // WatchList alpha at 1.31
			enabled:  []featuregate.Feature{CRDValidationRatcheting}},
		{name: "real: beta at 1.35, GA at 1.36",
			opts:     Options{EmulationVersion: []string{"1.35"}},
			disabled: []featuregate.Feature{"MutatingAdmissionPolicy"}},
		{name: "real: beta may be switched on while emulating",
			opts:    Options{EmulationVersion: []string{"1.35"}, FeatureGates: []string{"MutatingAdmissionPolicy=true"}},
			enabled: []featuregate.Feature{"MutatingAdmissionPolicy"}},
		{name: "real: WatchList's beta default off at 1.33",
			opts:     Options{BinaryVersion: "1.35", EmulationVersion: []string{"1.33"}},
			disabled: []featuregate.Feature{"WatchList"}},
		{name: "real: and on again at 1.34",
			opts:    Options{BinaryVersion: "1.35", EmulationVersion: []string{"1.34"}},
			enabled: []featuregate.Feature{"WatchList"}},
		{name: "real: StorageVersionAPI alpha before 1.33",
			opts:     Options{BinaryVersion: "1.33", EmulationVersion: []string{"1.32"}},
			disabled: []featuregate.Feature{StorageVersionAPI},
			enabled:  []featuregate.Feature{APIServerIdentity}},

		{name: "dependency: StorageVersionAPI needs APIServerIdentity",
			opts:          Options{FeatureGates: []string{"APIServerIdentity=false"}},
			wantErrSubstr: "StorageVersionAPI is enabled, but depends on features that are disabled: [APIServerIdentity]"},
		{name: "dependency: both off is fine",
			opts:     Options{FeatureGates: []string{"APIServerIdentity=false", "StorageVersionAPI=false"}},
			disabled: []featuregate.Feature{StorageVersionAPI, APIServerIdentity}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.opts.Complete(testContext(t))
			if tt.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.enabled {
				if !cfg.Enabled(f) {
					t.Errorf("%s disabled, want enabled", f)
				}
			}
			for _, f := range tt.disabled {
				if cfg.Enabled(f) {
					t.Errorf("%s enabled, want disabled", f)
				}
			}
			if cfg.FeatureGate().Enabled(StorageVersionAPI) != cfg.Enabled(StorageVersionAPI) {
				t.Error("FeatureGate() and Enabled disagree")
			}
		})
	}
}

// TestFeatureErrorsTogether checks that value problems and dependency problems are
// reported together (component-base alone stops before checking dependencies).
func TestFeatureErrorsTogether(t *testing.T) {
	got := errorLines(t, &Options{EmulationVersion: []string{"1.36"},
		FeatureGates: []string{"StorageVersionAPI=true,APIServerIdentity=false,CRDValidationRatcheting=false,Nope=true"}})
	want := []string{
		"cannot set feature gate CRDValidationRatcheting to false, feature is locked to true",
		"unrecognized feature gate: Nope",
		"StorageVersionAPI is enabled, but depends on features that are disabled: [APIServerIdentity]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
	got = errorLines(t, &Options{EmulationVersion: []string{"1.36"},
		FeatureGates: []string{"StorageVersionAPI=true,APIServerIdentity=false,CRDValidationRatcheting=false,SeparateCacheWatchRPC=true,CoordinatedLeaderElection=true"}})
	want = []string{
		"cannot set feature gate CRDValidationRatcheting to false, feature is locked to true",
		"unrecognized feature gate: CoordinatedLeaderElection",
		"unrecognized feature gate: SeparateCacheWatchRPC",
		"StorageVersionAPI is enabled, but depends on features that are disabled: [APIServerIdentity]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
}

// With KubeGates, every gate of kube-apiserver's code is a gate of the server: set at
// its own history, refused where kube-apiserver refuses it.
func TestKubeGates(t *testing.T) {
	kube := utilfeature.DefaultMutableFeatureGate // kube's gates, registered by pkg/features
	cfg, err := (&Options{KubeGates: kube, FeatureGates: []string{"ContainerStopSignals=true,HPAScaleToZero=false"}}).Complete(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Enabled("ContainerStopSignals") || cfg.Enabled("HPAScaleToZero") {
		t.Errorf("ContainerStopSignals %v, HPAScaleToZero %v; want set on, set off", cfg.Enabled("ContainerStopSignals"), cfg.Enabled("HPAScaleToZero"))
	}
	got := errorLines(t, &Options{KubeGates: kube, EmulationVersion: []string{"1.36"},
		FeatureGates: []string{"ContainerStopSignals=true,GenericWorkload=false"}})
	want := []string{
		"alpha features [ContainerStopSignals] cannot be enabled with emulation version 1.36, lower than the binary version 1.37: disable them or emulate 1.37",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
	got = errorLines(t, &Options{KubeGates: kube, BinaryVersion: "1.36", FeatureGates: []string{"HPAGeneration=true,Nope=true"}})
	want = []string{
		"cannot set feature gate HPAGeneration to true, feature is PreAlpha at emulated version 1.36, min compatibility version 1.35",
		"unrecognized feature gate: Nope",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
}
