package compatibility

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/concordproject/concord/catalog"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		name    string
		preset  Options // programmatic defaults, as a harness sets them
		args    []string
		want    Options
		wantErr bool
	}{
		{
			name: "both spellings share one value",
			args: []string{"--emulation-version=1.35", "--emulated-version=kube=1.36"},
			want: Options{EmulationVersion: []string{"1.35", "kube=1.36"}},
		},
		{
			name:   "a flag replaces the programmatic default, then accumulates",
			preset: Options{EmulationVersion: []string{"1.34"}, MinCompatibilityVersion: []string{"1.34"}},
			args:   []string{"--emulated-version=1.36", "--min-compatibility-version=1.35"},
			want:   Options{EmulationVersion: []string{"1.36"}, MinCompatibilityVersion: []string{"1.35"}},
		},
		{
			name:   "feature gates and runtime-config merge, in order, with the defaults",
			preset: Options{FeatureGates: []string{"WatchList=true"}},
			args: []string{"--feature-gates=AllBeta=true, WatchList=false", "--feature-gates", "kube:KMSv1=true",
				"--runtime-config=api/beta=true,networking.k8s.io/v1beta1", "--runtime-config=api/alpha=false"},
			want: Options{
				FeatureGates:  []string{"WatchList=true", "AllBeta=true", "WatchList=false", "kube:KMSv1=true"},
				RuntimeConfig: []string{"api/beta=true", "networking.k8s.io/v1beta1", "api/alpha=false"},
			},
		},
		{
			name: "booleans and files",
			args: []string{"--emulation-forward-compatible", "--runtime-config-emulation-forward-compatible=true",
				"--api-catalog=/tmp/c.yaml", "--binary-version=1.30"},
			want: Options{EmulationForwardCompatible: true, RuntimeConfigEmulationForwardCompatible: true, APICatalog: "/tmp/c.yaml", BinaryVersion: "1.30"},
		},
		{
			name:    "an unknown flag is pflag's business",
			args:    []string{"--compatibility-version=1.36"},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.preset
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.SetOutput(&discard{})
			o.AddFlags(fs)
			err := fs.Parse(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse: %v", err)
			}
			if tt.wantErr {
				return
			}
			if !equalOptions(o, tt.want) {
				t.Errorf("options = %+v, want %+v", o, tt.want)
			}
		})
	}
}

type discard struct{}

func (*discard) Write(p []byte) (int, error) { return len(p), nil }

func equalOptions(a, b Options) bool {
	return slices.Equal(a.EmulationVersion, b.EmulationVersion) && slices.Equal(a.MinCompatibilityVersion, b.MinCompatibilityVersion) &&
		slices.Equal(a.FeatureGates, b.FeatureGates) && slices.Equal(a.RuntimeConfig, b.RuntimeConfig) &&
		a.EmulationForwardCompatible == b.EmulationForwardCompatible && a.RuntimeConfigEmulationForwardCompatible == b.RuntimeConfigEmulationForwardCompatible &&
		a.APICatalog == b.APICatalog && a.BinaryVersion == b.BinaryVersion
}

// TestVersions checks the versions a server resolves to with the built-in catalog (binary
// 1.37, supported range [1.34, 1.37]) and truncated ones. The defaults match what a real
// kube-apiserver reports in /version: emulation-1, clamped at the bottom of the range.
func TestVersions(t *testing.T) {
	tests := []struct {
		name                     string
		opts                     Options
		binary, emulation, minCV string
	}{
		{name: "no flags", binary: "1.37", emulation: "1.37", minCV: "1.36"},
		{name: "emulate N-1", opts: Options{EmulationVersion: []string{"1.36"}}, binary: "1.37", emulation: "1.36", minCV: "1.35"},
		{name: "emulate N-2", opts: Options{EmulationVersion: []string{"1.35"}}, binary: "1.37", emulation: "1.35", minCV: "1.34"},
		{name: "emulate N-3: min compatibility clamped", opts: Options{EmulationVersion: []string{"1.34"}}, binary: "1.37", emulation: "1.34", minCV: "1.34"},
		{name: "v prefix", opts: Options{EmulationVersion: []string{"v1.36"}}, binary: "1.37", emulation: "1.36", minCV: "1.35"},
		{name: "zero patch", opts: Options{EmulationVersion: []string{"1.36.0"}}, binary: "1.37", emulation: "1.36", minCV: "1.35"},
		{name: "component form", opts: Options{EmulationVersion: []string{"kube=1.36"}, MinCompatibilityVersion: []string{"kube=1.34"}}, binary: "1.37", emulation: "1.36", minCV: "1.34"},
		{name: "min compatibility = emulation", opts: Options{MinCompatibilityVersion: []string{"1.37"}}, binary: "1.37", emulation: "1.37", minCV: "1.37"},
		{name: "min compatibility at the floor", opts: Options{EmulationVersion: []string{"1.36"}, MinCompatibilityVersion: []string{"1.34"}}, binary: "1.37", emulation: "1.36", minCV: "1.34"},
		{name: "binary version", opts: Options{BinaryVersion: "1.30"}, binary: "1.30", emulation: "1.30", minCV: "1.29"},
		{name: "binary version, emulate its N-3", opts: Options{BinaryVersion: "v1.30", EmulationVersion: []string{"1.27"}}, binary: "1.30", emulation: "1.27", minCV: "1.27"},
		{name: "floor is the catalog's oldest release", opts: Options{BinaryVersion: "1.21", EmulationVersion: []string{"1.20"}}, binary: "1.21", emulation: "1.20", minCV: "1.20"},
		{name: "a one-release build", opts: Options{BinaryVersion: "1.20"}, binary: "1.20", emulation: "1.20", minCV: "1.20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := complete(t, &tt.opts)
			v := cfg.Versions
			if v.Binary.String() != tt.binary || v.Emulation.String() != tt.emulation || v.MinCompatibility.String() != tt.minCV {
				t.Errorf("versions = %s, want binary %s, emulation %s, min compatibility %s", v, tt.binary, tt.emulation, tt.minCV)
			}
			if got := cfg.Catalog.BinaryVersion().String(); got != tt.binary {
				t.Errorf("catalog binary version = %s, want %s", got, tt.binary)
			}
		})
	}
}

// TestValidation checks that every invalid value is reported, each on one line in
// kube-apiserver's words where it has them, and all of them together.
func TestValidation(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{
			name: "emulation above the binary",
			opts: Options{EmulationVersion: []string{"1.38"}},
			want: []string{"emulation version 1.38 is not between [1.34, 1.37]"},
		},
		{
			name: "emulation below the supported range",
			opts: Options{EmulationVersion: []string{"1.33"}},
			want: []string{"emulation version 1.33 is not between [1.34, 1.37]"},
		},
		{
			name: "patch version",
			opts: Options{EmulationVersion: []string{"1.35.1"}},
			want: []string{"patch version not allowed, got: kube=1.35.1"},
		},
		{
			name: "not a version",
			opts: Options{EmulationVersion: []string{"foo"}},
			want: []string{`could not parse "foo" as version`},
		},
		{
			name: "unknown component",
			opts: Options{EmulationVersion: []string{"wardle=1.2"}},
			want: []string{"component not registered: wardle"},
		},
		{
			name: "both spellings given",
			opts: Options{EmulationVersion: []string{"1.35", "kube=1.36"}},
			want: []string{"duplicate version flag, kube=1.35 and kube=1.36"},
		},
		{
			name: "min compatibility above emulation",
			opts: Options{EmulationVersion: []string{"1.36"}, MinCompatibilityVersion: []string{"1.37"}},
			want: []string{"minCompatibilityVersion version 1.37 is not between [1.34, 1.36]"},
		},
		{
			name: "min compatibility below the supported range",
			opts: Options{MinCompatibilityVersion: []string{"1.33"}},
			want: []string{"minCompatibilityVersion version 1.33 is not between [1.34, 1.37]"},
		},
		{
			name: "both versions wrong",
			opts: Options{EmulationVersion: []string{"1.38"}, MinCompatibilityVersion: []string{"1.10"}},
			want: []string{"emulation version 1.38 is not between [1.34, 1.37]", "minCompatibilityVersion version 1.10 is not between [1.34, 1.37]"},
		},
		{
			// 1.34 has podcertificaterequests and storageversionmigrations only as
			// v1alpha1, which 1.35 removed: a rollback to 1.34 could not read anything
			// this server writes.
			name: "no storage version for a served resource",
			opts: Options{MinCompatibilityVersion: []string{"1.34"}},
			want: []string{"no storage version is readable by every release in the compatibility window: podcertificaterequests.certificates.k8s.io " +
				"(window [1.34, 1.38]; versions: v1 introduced 1.37; v1beta1 introduced 1.35, removed 1.40; v1alpha1 introduced 1.34, removed 1.35); " +
				"--min-compatibility-version 1.35 or later would allow one", "no storage version is readable by every release in the compatibility window: storageversionmigrations.storagemigration.k8s.io " +
				"(window [1.34, 1.38]; versions: v1 introduced 1.37; v1beta1 introduced 1.35, removed 1.40; v1alpha1 introduced 1.30, removed 1.35); " +
				"--min-compatibility-version 1.35 or later would allow one"},
		},
		{
			name: "truncated binary: the range moves",
			opts: Options{BinaryVersion: "1.30", EmulationVersion: []string{"1.26"}},
			want: []string{"emulation version 1.26 is not between [1.27, 1.30]"},
		},
		{
			name: "forward compatibility without emulation",
			opts: Options{EmulationForwardCompatible: true, RuntimeConfigEmulationForwardCompatible: true},
			want: []string{
				"ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version",
				"ServerRunOptions.RuntimeConfigEmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version",
			},
		},
		{
			name: "feature gate syntax",
			opts: Options{FeatureGates: []string{"WatchList", "KMSv1=maybe", "wardle:Foo=true"}},
			want: []string{
				"missing bool value for WatchList",
				`invalid value of KMSv1=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax`,
				"component not registered: wardle",
			},
		},
		{
			name: "unknown feature gates, all of them",
			opts: Options{FeatureGates: []string{"Foo=true,Bar=false"}},
			want: []string{"unrecognized feature gate: Bar", "unrecognized feature gate: Foo"},
		},
		{
			name: "runtime-config keys",
			opts: Options{RuntimeConfig: []string{"example.org/v1=true", "foo/v1", "networking.k8s.io/v9=true", "networking.k8s.io/v1/widgets", "batch/v1=yes", "a/b/c/d"}},
			want: []string{
				"group version networking.k8s.io/v9 that has not been registered",
				"group version resource networking.k8s.io/v1, Resource=widgets that has not been registered",
				`invalid value of batch/v1: yes, err: strconv.ParseBool: parsing "yes": invalid syntax`,
				`invalid runtime-config key "a/b/c/d": use api/all, api/ga, api/beta, api/alpha, <group>/<version> or <group>/<version>/<resource>`,
				"unknown api groups example.org,foo",
			},
		},
		{
			name: "runtime-config with only api/all=false",
			opts: Options{RuntimeConfig: []string{"api/all=false"}},
			want: []string{"invalid runtime-config with only api/all=false"},
		},
		{
			name: "everything wrong at once",
			opts: Options{
				EmulationVersion: []string{"1.38"}, FeatureGates: []string{"Foo"}, RuntimeConfig: []string{"example.org/v1"},
				EmulationForwardCompatible: true,
			},
			want: []string{"emulation version 1.38 is not between [1.34, 1.37]", "missing bool value for Foo", "unknown api groups example.org"},
		},
		{
			name: "unknown release for --binary-version",
			opts: Options{BinaryVersion: "1.19"},
			want: []string{"--binary-version 1.19: release not in the API catalog: 1.19 is not one of the releases 1.20 to 1.37 the API catalog describes"},
		},
		{
			name: "unparsable --binary-version",
			opts: Options{BinaryVersion: "latest"},
			want: []string{`--binary-version "latest": could not parse "latest" as version`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorLines(t, &tt.opts)
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

func TestAPICatalogFile(t *testing.T) {
	cat := newCatalog(t, "1.30", "1.32", []catalog.Resource{res("example.com", "widgets", "Widget", ver("v1", "1.31", ""), ver("v1beta1", "1.30", ""))}, nil)
	data, err := cat.Encode()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	cfg := complete(t, &Options{APICatalog: path, BinaryVersion: "1.31"})
	if got := cfg.Versions.String(); got != "binary 1.31, emulation 1.31, min compatibility 1.30" {
		t.Errorf("versions = %s", got)
	}
	// v1 is new at 1.31: the window [1.30, 1.32] cannot read it everywhere.
	if sv, _ := cfg.StorageVersion(cat.Resource("example.com", "widgets").GroupResource()); sv != "v1beta1" {
		t.Errorf("storage version = %q, want v1beta1", sv)
	}

	_, err = (&Options{APICatalog: filepath.Join(t.TempDir(), "missing.yaml")}).Complete(testContext(t))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing catalog file: %v", err)
	}
	// --api-catalog wins over a catalog given in code.
	cfg = complete(t, &Options{APICatalog: path, Catalog: defaultCatalog(t)})
	if cfg.Catalog.BinaryVersion().String() != "1.32" {
		t.Errorf("--api-catalog ignored: binary %s", cfg.Catalog.BinaryVersion())
	}
}

func TestCatalogWithoutConcordGates(t *testing.T) {
	cat, err := catalog.New(releases("1.30", "1.31"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := errorLines(t, &Options{Catalog: cat})
	want := []string{
		"the API catalog does not define feature gate APIServerIdentity, which Concord honours",
		"the API catalog does not define feature gate StorageVersionAPI, which Concord honours",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
}
