package compatibility

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/concordproject/concord/catalog"
)

// kepAPIs are the API lifecycles of KEP-4330's API availability examples (section "API
// availability in forward-compatible mode", after kubernetes/enhancements#5038) and of
// the table in the description of kubernetes/kubernetes#130354, which implemented them.
// Each is a synthetic catalog of releases 1.28-1.33, so the binary version is 1.33, as in
// both tables.
//
// The KEP writes its APIs "api/<version>", "api" standing for a group. Concord reads
// --runtime-config=api/<version> as the core group (kube-apiserver does so only for
// api/v1), so the KEP's APIs are core-group resources here and the flags read as the
// KEP's. The PR's groupA and groupB are spelt groupa and groupb: a group name is a
// DNS-1123 subdomain, lower case.
var kepAPIs = map[string][]catalog.Resource{
	// A: v1alpha1 introduced=1.30 removed=1.31; v1beta1 introduced=1.31 removed=1.32; v1 introduced=1.32
	"A": {res("", "widgets", "Widget", ver("v1alpha1", "1.30", "1.31"), ver("v1beta1", "1.31", "1.32"), ver("v1", "1.32", ""))},
	// B: v1beta1 introduced=1.31 removed=1.32; v1beta2 introduced=1.32
	"B": {res("", "widgets", "Widget", ver("v1beta1", "1.31", "1.32"), ver("v1beta2", "1.32", ""))},
	// C: v1 introduced=1.28; v2beta1 introduced=1.31 removed=1.32; v2 introduced=1.32
	"C": {res("", "widgets", "Widget", ver("v1", "1.28", ""), ver("v2beta1", "1.31", "1.32"), ver("v2", "1.32", ""))},
	// groupA/v1beta1 introduced 1.31, groupA/v1beta2 introduced 1.32, groupA/v1 introduced 1.33;
	// groupB/v1beta1 introduced 1.32, groupB/v1 introduced 1.33.
	"PR #130354": {
		res("groupa", "widgets", "Widget", ver("v1beta1", "1.31", ""), ver("v1beta2", "1.32", ""), ver("v1", "1.33", "")),
		res("groupb", "widgets", "Widget", ver("v1beta1", "1.32", ""), ver("v1", "1.33", "")),
	},
}

// The start-up errors of the examples whose lifecycles leave no storage version. The KEP's
// lifecycles A and B replace a version in the very release that removes the one before,
// so from emulation 1.31 no single version is readable by every release of the window
// [min compatibility 1.30, emulation+1 = 1.32]: under the KEP's storage rule, which
// Concord applies (docs/compatibility.md, "Storage version"), a server that serves A or B
// at 1.31 in any version (or A's v1alpha1 at 1.30) refuses to start, whatever the
// availability; kube-apiserver, which does not intersect the window, picks a version
// anyway. The availability itself is decided, and checked, before the storage step.
const (
	noStorageA130 = "no storage version is readable by every release in the compatibility window: widgets (window [1.30, 1.31]; " +
		"versions: v1 introduced 1.32; v1beta1 introduced 1.31, removed 1.32; v1alpha1 introduced 1.30, removed 1.31)"
	noStorageA131 = "no storage version is readable by every release in the compatibility window: widgets (window [1.30, 1.32]; " +
		"versions: v1 introduced 1.32; v1beta1 introduced 1.31, removed 1.32; v1alpha1 introduced 1.30, removed 1.31)"
	noStorageB131 = "no storage version is readable by every release in the compatibility window: widgets (window [1.30, 1.32]; " +
		"versions: v1beta2 introduced 1.32; v1beta1 introduced 1.31, removed 1.32)"
)

// kepExample is one alternative of one row of the tables: an API, an emulation version
// and flags, with the KEP's answer, kube-apiserver's where it differs, and Concord's.
type kepExample struct {
	api       string // a key of kepAPIs
	emulation string // --emulation-version
	flags     string // the other flags, as on the command line

	// kep is the table's answer for these flags: the group-versions available, space
	// separated, "" for none, "error" or "NA". Unset (with inTable false) for
	// alternatives the tables do not list.
	kep     string
	inTable bool
	// shipped is kube-apiserver's answer and why, where it differs from the KEP's.
	// Concord follows kube-apiserver there, except for alpha APIs (see the A@1.30 rows).
	shipped string

	// Concord's answer: the group-versions served, or the API enablement errors (one
	// line each) that refuse the flags, and, when what is served has no storage
	// version, the start-up error that follows.
	available []string
	err       string
	storage   string
}

// kepExamples reads like the KEP's table: lifecycle | emulation | flags | available.
var kepExamples = []kepExample{
	// A @1.30: NA because we do not support emulating alpha APIs.
	{api: "A", emulation: "1.30", flags: "",
		kep: "NA", inTable: true,
		shipped:   "nothing of A is served, and the server starts: no alpha API is asked for (the same in Concord)",
		available: nil},
	{api: "A", emulation: "1.30", flags: "--runtime-config=api/v1alpha1=true",
		kep: "NA", inTable: true,
		shipped: "api/v1alpha1: kube-apiserver serves it and only logs \"alpha api enabled with emulated version 1.30 instead of the binary's version 1.33, " +
			"this is unsupported, proceed at your own risk\"; Concord refuses, as the KEP says (docs/compatibility.md, \"Alpha and emulation\")",
		err:     "alpha APIs [v1alpha1] cannot be enabled with emulation version 1.30, lower than the binary version 1.33: disable them in --runtime-config or emulate 1.33",
		storage: noStorageA130},
	{api: "A", emulation: "1.30", flags: "--runtime-config=api/v1alpha1=true --emulation-forward-compatible",
		kep: "NA", inTable: true,
		shipped: "api/v1alpha1 with the same warning: an alpha version never brings its successors, in either implementation; Concord refuses the alpha version",
		err:     "alpha APIs [v1alpha1] cannot be enabled with emulation version 1.30, lower than the binary version 1.33: disable them in --runtime-config or emulate 1.33",
		storage: noStorageA130},

	// A @1.31: api/v1beta1 available when --runtime-config=api/v1beta1=true; api/v1beta1
	// and api/v1 available only when --runtime-config=api/v1beta1=true,api/v1=true or
	// --runtime-config=api/v1beta1=true --emulation-forward-compatible=true.
	{api: "A", emulation: "1.31", flags: "",
		kep: "", inTable: true, available: nil},
	{api: "A", emulation: "1.31", flags: "--runtime-config=api/v1beta1=true",
		kep: "api/v1beta1", inTable: true, available: []string{"api/v1beta1"}, storage: noStorageA131},
	{api: "A", emulation: "1.31", flags: "--runtime-config=api/v1beta1=true,api/v1=true",
		kep: "api/v1beta1 api/v1", inTable: true,
		shipped: "error: v1 is introduced at 1.32, after the emulation version, and naming it in --runtime-config needs --runtime-config-emulation-forward-compatible=true",
		err:     "cannot enable version v1 in runtime-config because all the resources have been introduced after the current version 1.31. Consider setting --runtime-config-emulation-forward-compatible=true",
		storage: noStorageA131},
	{api: "A", emulation: "1.31", flags: "--runtime-config=api/v1beta1=true,api/v1=true --runtime-config-emulation-forward-compatible=true",
		available: []string{"api/v1beta1", "api/v1"}, storage: noStorageA131},
	{api: "A", emulation: "1.31", flags: "--runtime-config=api/v1beta1=true,api/v1=true --emulation-forward-compatible=true",
		available: []string{"api/v1beta1", "api/v1"}, storage: noStorageA131},
	{api: "A", emulation: "1.31", flags: "--runtime-config=api/v1beta1=true --emulation-forward-compatible=true",
		kep: "api/v1beta1 api/v1", inTable: true, available: []string{"api/v1beta1", "api/v1"}, storage: noStorageA131},

	// A @1.33: api/v1.
	{api: "A", emulation: "1.33", flags: "",
		kep: "api/v1", inTable: true, available: []string{"api/v1"}},
	{api: "A", emulation: "1.33", flags: "--emulation-forward-compatible=true --runtime-config-emulation-forward-compatible=true",
		available: []string{"api/v1"},
		err: "ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version\n" +
			"ServerRunOptions.RuntimeConfigEmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version"},

	// B @1.31: api/v1beta1 available when --runtime-config=api/v1beta1=true; api/v1beta1
	// and api/v1beta2 available only when --runtime-config=api/v1beta1=true,api/v1beta2=true
	// or --runtime-config=api/v1beta1=true --emulation-forward-compatible=true.
	{api: "B", emulation: "1.31", flags: "",
		kep: "", inTable: true, available: nil},
	{api: "B", emulation: "1.31", flags: "--runtime-config=api/v1beta1=true",
		kep: "api/v1beta1", inTable: true, available: []string{"api/v1beta1"}, storage: noStorageB131},
	{api: "B", emulation: "1.31", flags: "--runtime-config=api/v1beta1=true,api/v1beta2=true",
		kep: "api/v1beta1 api/v1beta2", inTable: true,
		shipped: "error: v1beta2 is introduced at 1.32, after the emulation version, and naming it in --runtime-config needs --runtime-config-emulation-forward-compatible=true",
		err:     "cannot enable version v1beta2 in runtime-config because all the resources have been introduced after the current version 1.31. Consider setting --runtime-config-emulation-forward-compatible=true",
		storage: noStorageB131},
	{api: "B", emulation: "1.31", flags: "--runtime-config=api/v1beta1=true,api/v1beta2=true --runtime-config-emulation-forward-compatible=true",
		available: []string{"api/v1beta1", "api/v1beta2"}, storage: noStorageB131},
	{api: "B", emulation: "1.31", flags: "--runtime-config=api/v1beta1=true --emulation-forward-compatible=true",
		kep: "api/v1beta1 api/v1beta2", inTable: true, available: []string{"api/v1beta1", "api/v1beta2"}, storage: noStorageB131},

	// B @1.33: api/v1beta2 available only when --runtime-config=api/v1beta2=true.
	{api: "B", emulation: "1.33", flags: "",
		kep: "", inTable: true, available: nil},
	{api: "B", emulation: "1.33", flags: "--runtime-config=api/v1beta2=true",
		kep: "api/v1beta2", inTable: true, available: []string{"api/v1beta2"}},

	// C @1.30: api/v1; api/v1, api/v2 when --runtime-config=api/v2=true or
	// --emulation-forward-compatible=true.
	{api: "C", emulation: "1.30", flags: "",
		kep: "api/v1", inTable: true, available: []string{"api/v1"}},
	{api: "C", emulation: "1.30", flags: "--runtime-config=api/v2=true",
		kep: "api/v1 api/v2", inTable: true,
		shipped: "error: v2 is introduced at 1.32, after the emulation version, and naming it in --runtime-config needs --runtime-config-emulation-forward-compatible=true",
		err:     "cannot enable version v2 in runtime-config because all the resources have been introduced after the current version 1.30. Consider setting --runtime-config-emulation-forward-compatible=true"},
	{api: "C", emulation: "1.30", flags: "--runtime-config=api/v2=true --runtime-config-emulation-forward-compatible=true",
		available: []string{"api/v1", "api/v2"}},
	{api: "C", emulation: "1.30", flags: "--emulation-forward-compatible=true",
		kep: "api/v1 api/v2", inTable: true, available: []string{"api/v1", "api/v2"}},

	// C @1.31: api/v1, api/v2beta1 available when --runtime-config=api/v2beta1=true;
	// api/v1, api/v2beta1, api/v2 available only when
	// --runtime-config=api/v2beta1=true,api/v2=true or --runtime-config=api/v2beta1=true
	// --emulation-forward-compatible=true.
	{api: "C", emulation: "1.31", flags: "",
		kep: "api/v1", inTable: true, available: []string{"api/v1"}},
	{api: "C", emulation: "1.31", flags: "--runtime-config=api/v2beta1=true",
		kep: "api/v1 api/v2beta1", inTable: true, available: []string{"api/v1", "api/v2beta1"}},
	{api: "C", emulation: "1.31", flags: "--runtime-config=api/v2beta1=true,api/v2=true",
		kep: "api/v1 api/v2beta1 api/v2", inTable: true,
		shipped: "error: v2 is introduced at 1.32, after the emulation version, and naming it in --runtime-config needs --runtime-config-emulation-forward-compatible=true",
		err:     "cannot enable version v2 in runtime-config because all the resources have been introduced after the current version 1.31. Consider setting --runtime-config-emulation-forward-compatible=true"},
	{api: "C", emulation: "1.31", flags: "--runtime-config=api/v2beta1=true,api/v2=true --runtime-config-emulation-forward-compatible=true",
		available: []string{"api/v1", "api/v2beta1", "api/v2"}},
	{api: "C", emulation: "1.31", flags: "--runtime-config=api/v2beta1=true --emulation-forward-compatible=true",
		kep: "api/v1 api/v2beta1 api/v2", inTable: true, available: []string{"api/v1", "api/v2beta1", "api/v2"}},
	// Not in the table: forward compatibility from the GA v1 brings v2 (higher priority),
	// not v2beta1 (lower), as at 1.30.
	{api: "C", emulation: "1.31", flags: "--emulation-forward-compatible=true",
		available: []string{"api/v1", "api/v2"}},

	// C @1.33: api/v1, api/v2.
	{api: "C", emulation: "1.33", flags: "",
		kep: "api/v1 api/v2", inTable: true, available: []string{"api/v1", "api/v2"}},

	// kubernetes/kubernetes#130354, EmulationVersion=1.31, BinaryVersion=1.33.
	{api: "PR #130354", emulation: "1.31", flags: "--runtime-config=groupa/v1beta1=true",
		kep: "groupa/v1beta1", inTable: true, available: []string{"groupa/v1beta1"}},
	{api: "PR #130354", emulation: "1.31", flags: "--runtime-config=groupa/v1beta1 --emulation-forward-compatible",
		kep: "groupa/v1beta1 groupa/v1beta2 groupa/v1", inTable: true, available: []string{"groupa/v1beta1", "groupa/v1beta2", "groupa/v1"}},
	{api: "PR #130354", emulation: "1.31", flags: "--runtime-config=groupa/v1beta1,groupa/v1 --runtime-config-emulation-forward-compatible",
		kep: "groupa/v1beta1 groupa/v1", inTable: true, available: []string{"groupa/v1beta1", "groupa/v1"}},
	{api: "PR #130354", emulation: "1.31", flags: "--runtime-config=groupb/v1beta1=true",
		kep: "error", inTable: true,
		err: "cannot enable version groupb/v1beta1 in runtime-config because all the resources have been introduced after the current version 1.31. Consider setting --runtime-config-emulation-forward-compatible=true"},
	{api: "PR #130354", emulation: "1.31", flags: "--runtime-config=groupb/v1beta1=true --emulation-forward-compatible",
		kep: "error", inTable: true,
		err: "cannot enable version groupb/v1beta1 in runtime-config because all the resources have been introduced after the current version 1.31. Consider setting --runtime-config-emulation-forward-compatible=true"},
	// Not in our copy of the table (truncated there), but what the PR's description of
	// the flags implies: naming a future version needs its own mode, which then serves it.
	{api: "PR #130354", emulation: "1.31", flags: "--runtime-config=groupa/v1beta1,groupa/v1",
		err: "cannot enable version groupa/v1 in runtime-config because all the resources have been introduced after the current version 1.31. Consider setting --runtime-config-emulation-forward-compatible=true"},
	{api: "PR #130354", emulation: "1.31", flags: "--runtime-config=groupb/v1beta1=true --runtime-config-emulation-forward-compatible",
		available: []string{"groupb/v1beta1"}},
}

// TestKEPAPIAvailabilityExamples reproduces every example of KEP-4330's API availability
// tables (kepExamples), one case per row and per alternative, on a build of 1.33: the
// flags are parsed as the server parses them, the availability is resolved as Complete
// resolves it, and Complete itself must agree (start with exactly that availability, or
// refuse with the enablement and storage errors).
func TestKEPAPIAvailabilityExamples(t *testing.T) {
	catalogs := map[string]*catalog.Catalog{}
	for name, resources := range kepAPIs {
		catalogs[name] = newCatalog(t, "1.28", "1.33", resources, nil)
	}
	for _, tt := range kepExamples {
		t.Run(tt.api+"@"+tt.emulation+"/"+tt.flags, func(t *testing.T) {
			// The table is consistent: where kube-apiserver agrees with the KEP, so does
			// Concord (and it says how it differs otherwise).
			if tt.inTable && tt.shipped == "" {
				want := strings.Join(tt.available, " ")
				if tt.err != "" {
					want = "error"
				}
				if tt.kep != want {
					t.Fatalf("the KEP says %q, Concord %q, and no difference is given", tt.kep, want)
				}
			}

			o := NewOptions()
			fs := pflag.NewFlagSet("concord", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.AddFlags(fs)
			if err := fs.Parse(append([]string{"--emulation-version=" + tt.emulation}, strings.Fields(tt.flags)...)); err != nil {
				t.Fatalf("flags: %v", err)
			}
			o.Catalog = catalogs[tt.api]

			a, errs := o.resolveAPIs(klog.FromContext(testContext(t)))
			if a == nil {
				t.Fatalf("availability unresolved: %v", errors.Join(errs...))
			}
			if !a.versions.Binary.EqualTo(rel("1.33")) {
				t.Fatalf("binary version %s, want 1.33", a.versions.Binary)
			}
			if got := joined(errs); got != tt.err {
				t.Errorf("API enablement errors:\n%s\nwant:\n%s", got, tt.err)
			}
			got := servedGroupVersions(a)
			if tt.err == "" || tt.available != nil {
				if want := sortedCopy(tt.available); !slices.Equal(got, want) {
					t.Errorf("available %v, want %v", got, want)
				}
			}

			cfg, err := o.Complete(testContext(t))
			wantErr := strings.Join(slices.DeleteFunc([]string{tt.err, tt.storage}, func(s string) bool { return s == "" }), "\n")
			switch {
			case wantErr != "":
				if err == nil || err.Error() != wantErr {
					t.Fatalf("Complete: error %v, want:\n%s", err, wantErr)
				}
				if tt.storage != "" && !errors.Is(err, ErrNoStorageVersion) {
					t.Errorf("Complete: error does not wrap ErrNoStorageVersion: %v", err)
				}
			case err != nil:
				t.Fatalf("Complete: %v", err)
			default:
				var fromConfig []string
				for _, gvr := range cfg.ServedResources() {
					fromConfig = append(fromConfig, kepGroupVersion(gvr.Group, gvr.Version))
				}
				slices.Sort(fromConfig)
				if !slices.Equal(fromConfig, got) {
					t.Errorf("Complete serves %v, the resolution %v", fromConfig, got)
				}
			}
		})
	}
}

// servedGroupVersions returns the served group-versions in the tables' spelling,
// "api/<version>" for the core group, sorted. Every example API has one resource per
// group, so a group-version is one resource.
func servedGroupVersions(a *resolvedAPIs) []string {
	var out []string
	for gvr := range a.served {
		out = append(out, kepGroupVersion(gvr.Group, gvr.Version))
	}
	slices.Sort(out)
	return out
}

func kepGroupVersion(group, version string) string {
	if group == "" {
		group = "api"
	}
	return group + "/" + version
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// joined returns errs one per line, as errors.Join prints them; "" for none.
func joined(errs []error) string {
	if err := errors.Join(errs...); err != nil {
		return err.Error()
	}
	return ""
}
