package compatibility

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/concordproject/concord/catalog"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestRules runs the files of testdata/rules: which versions a server serves
// (enablement) and in which version it stores each resource (storage-version choice),
// for catalogs and flags the files give. Directives:
//
//	catalog default                     the built-in catalog
//	catalog from=<release> to=<release> a synthetic one; input: one resource per line,
//	                                    <plural>[.<group>] <Kind> <version>@<introduced>[-<removed>]...
//	serve [binary=<r>] [emulation=<r>] [min-compat=<r>] [forward] [rc-forward] [only=<plural>[.<group>]]
//	                                    resolve the flags (input: --runtime-config items, one
//	                                    per line) and print what is served and how it is stored
//	storage-version resource=<plural>[.<group>] binary=<r> emulation=<r> min-compat=<r>
//	                                    the storage version rule alone
//
// Run with -rewrite to update the files.
func TestRules(t *testing.T) {
	datadriven.Walk(t, "testdata/rules", func(t *testing.T, path string) {
		var cat *catalog.Catalog
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "catalog":
				cat = catalogOf(t, d)
				return fmt.Sprintf("binary %s, %d resources", cat.BinaryVersion(), len(cat.Resources()))
			case "serve":
				return serve(t, d, cat)
			case "storage-version":
				return storageVersionOf(t, d, cat)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

// catalogOf builds the catalog a catalog directive describes.
func catalogOf(t *testing.T, d *datadriven.TestData) *catalog.Catalog {
	if d.HasArg("default") {
		return defaultCatalog(t)
	}
	var from, to string
	d.ScanArgs(t, "from", &from)
	d.ScanArgs(t, "to", &to)
	var resources []catalog.Resource
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			d.Fatalf(t, "%q: want <plural>[.<group>] <Kind> <version>@<introduced>[-<removed>]...", line)
		}
		gr := schema.ParseGroupResource(f[0])
		var versions []catalog.Version
		for _, v := range f[2:] {
			name, life, _ := strings.Cut(v, "@")
			introduced, removed, _ := strings.Cut(life, "-")
			versions = append(versions, ver(name, introduced, removed))
		}
		resources = append(resources, res(gr.Group, gr.Resource, f[1], versions...))
	}
	return newCatalog(t, from, to, resources, nil)
}

// serve resolves the options of a serve directive and describes the outcome: each
// served version, with the resource's storage version, or the error's lines.
func serve(t *testing.T, d *datadriven.TestData, cat *catalog.Catalog) string {
	o := &Options{Catalog: cat, EmulationForwardCompatible: d.HasArg("forward"), RuntimeConfigEmulationForwardCompatible: d.HasArg("rc-forward")}
	var emulation, minCompat, only string
	d.MaybeScanArgs(t, "binary", &o.BinaryVersion)
	if d.MaybeScanArgs(t, "emulation", &emulation) {
		o.EmulationVersion = []string{emulation}
	}
	if d.MaybeScanArgs(t, "min-compat", &minCompat) {
		o.MinCompatibilityVersion = []string{minCompat}
	}
	d.MaybeScanArgs(t, "only", &only)
	if in := strings.TrimSpace(d.Input); in != "" {
		o.RuntimeConfig = strings.Split(in, "\n")
	}
	cfg, err := o.Complete(testContext(t))
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, gvr := range cfg.ServedResources() {
		gr := gvr.GroupResource()
		if only != "" && gr != schema.ParseGroupResource(only) {
			continue
		}
		sv, ok := cfg.StorageVersion(gr)
		if !ok {
			t.Fatalf("%s: %s is served but has no storage version", d.Pos, gvr)
		}
		fmt.Fprintf(&b, "%s (stored as %s)\n", gvrString(gvr), sv)
	}
	if b.Len() == 0 {
		return "nothing served"
	}
	return b.String()
}

// storageVersionOf applies the storage version rule as a storage-version directive
// says.
func storageVersionOf(t *testing.T, d *datadriven.TestData, cat *catalog.Catalog) string {
	var resource, binary, emulation, minCompat string
	d.ScanArgs(t, "resource", &resource)
	d.ScanArgs(t, "binary", &binary)
	d.ScanArgs(t, "emulation", &emulation)
	d.ScanArgs(t, "min-compat", &minCompat)
	gr := schema.ParseGroupResource(resource)
	r := cat.Resource(gr.Group, gr.Resource)
	if r == nil {
		d.Fatalf(t, "no resource %s in the catalog", gr)
	}
	sv, err := StorageVersion(r, Versions{Binary: rel(binary), Emulation: rel(emulation), MinCompatibility: rel(minCompat)})
	if err != nil {
		if !errors.Is(err, ErrNoStorageVersion) {
			t.Fatalf("%s: an error that does not wrap ErrNoStorageVersion: %v", d.Pos, err)
		}
		return "error: " + err.Error()
	}
	return sv
}
