package upgradecheck

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCheck runs the stories of testdata/check: what the cluster holds, what a target
// release (and the releases that could be steps towards it) decode and store, and
// Check's report as the command prints it. Each file is one story, told with:
//
//	catalog                     every version the full catalog ever had, one
//	<resource> <Kind> <v>...    resource a line (<resource>.<group>, or <resource>)
//
//	release <binary> [emulation=<e>]       the target (no steps yet); one served
//	<resource> <Kind> <v>... storage=<v>   resource a line: every version it decodes,
//	                                       and the stored one
//
//	step <binary> min=<x>       a release that can run with --min-compatibility-version=x
//	(lines as for release)      (x is the target)
//
//	state <resource> persisted=(<v>,...) [current=<v>] [age=<duration>]
//	    a StorageState: versions are turned into their hashes, Unknown stays, #<h> is
//	    the raw hash <h>; age is its heartbeat's (default 1m)
//	storageversion <resource> [common=<v>] servers=(<id>:<v>,...)
//	crd <resource> kind=<Kind> versions=(<v>,...) storage=<v> stored=(<v>,...)
//	migration <resource> name=<name> phase=<phase> [reason=<reason>]
//	fleet [binary=<v>] [min=<v>]  what the running servers announce
//	fielduse <resource> version=<v> path=<p> introduced=<r> objects=<n> examples=(<ns/name>,...)
//	    persisted objects use a field the target does not know
//	check                       prints the report and its error
//
// Run with -rewrite to update the files.
func TestCheck(t *testing.T) {
	datadriven.Walk(t, "testdata/check", func(t *testing.T, path string) {
		in := newWorld()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "catalog":
				for _, f := range lines(d.Input) {
					in.Catalog[parseGR(f[0])] = Known{Kind: f[1], Versions: f[2:]}
				}
			case "release", "step":
				rel := storyRelease(t, d)
				if d.Cmd == "release" {
					in.Target, in.Steps = rel, nil
				} else {
					in.Steps = append(in.Steps, rel)
				}
			case "state":
				addState(t, d, &in)
			case "storageversion":
				addStorageVersion(t, d, &in)
			case "crd":
				gr := parseGR(d.CmdArgs[0].Key)
				var c CRD
				d.ScanArgs(t, "kind", &c.Kind)
				d.ScanArgs(t, "storage", &c.StorageVersion)
				c.Versions, c.StoredVersions = vals(d, "versions"), vals(d, "stored")
				in.CRDs[gr] = c
			case "migration":
				var m Migration
				d.ScanArgs(t, "name", &m.Name)
				d.ScanArgs(t, "phase", &m.Phase)
				d.MaybeScanArgs(t, "reason", &m.Reason)
				in.Migrations[parseGR(d.CmdArgs[0].Key)] = m
			case "fleet":
				d.MaybeScanArgs(t, "binary", &in.Fleet.Binary)
				d.MaybeScanArgs(t, "min", &in.Fleet.MinCompatibility)
			case "fielduse":
				addFieldUse(t, d, &in)
			case "check":
				return check(t, in)
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			return ""
		})
	})
}

func newWorld() Input {
	return Input{
		Catalog: map[schema.GroupResource]Known{}, States: map[schema.GroupResource]State{},
		StorageVersions: map[schema.GroupResource]Encodings{}, CRDs: map[schema.GroupResource]CRD{},
		Migrations: map[schema.GroupResource]Migration{},
		Now:        time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Staleness: 10 * time.Minute,
	}
}

// check runs Check and prints its report and error; it also checks that the error
// names exactly the blocked resources and wraps ErrNotSafe.
func check(t *testing.T, in Input) string {
	r := Check(in)
	var b strings.Builder
	if err := r.Print(&b); err != nil {
		t.Fatal(err)
	}
	err := r.Err()
	if (err != nil) != (len(r.Blocked())+len(r.FleetBlocked) > 0) || err != nil && !errors.Is(err, ErrNotSafe) {
		t.Fatalf("Err() = %v with %d blocked", err, len(r.Blocked()))
	}
	if err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	return b.String()
}

func lines(input string) [][]string {
	var out [][]string
	for _, l := range strings.Split(input, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

func parseGR(name string) schema.GroupResource {
	resource, group, _ := strings.Cut(name, ".")
	return schema.GroupResource{Group: group, Resource: resource}
}

func storyRelease(t *testing.T, d *datadriven.TestData) Release {
	rel := Release{Binary: d.CmdArgs[0].Key, Resources: map[schema.GroupResource]Served{}}
	rel.Emulation = rel.Binary
	d.MaybeScanArgs(t, "emulation", &rel.Emulation)
	d.MaybeScanArgs(t, "min", &rel.MinCompatibility)
	for _, f := range lines(d.Input) {
		s := Served{Kind: f[1]}
		for _, v := range f[2:] {
			if sv, ok := strings.CutPrefix(v, "storage="); ok {
				s.StorageVersion = sv
			} else {
				s.Versions = append(s.Versions, v)
			}
		}
		rel.Resources[parseGR(f[0])] = s
	}
	return rel
}

func vals(d *datadriven.TestData, key string) []string {
	arg, ok := d.Arg(key)
	if !ok {
		return nil
	}
	return arg.Vals
}

// kindOf finds gr's kind wherever the story defined it.
func kindOf(in *Input, gr schema.GroupResource) string {
	if k, ok := in.Catalog[gr]; ok {
		return k.Kind
	}
	if c, ok := in.CRDs[gr]; ok {
		return c.Kind
	}
	for _, rel := range append([]Release{in.Target}, in.Steps...) {
		if s, ok := rel.Resources[gr]; ok {
			return s.Kind
		}
	}
	return "Unknown" + gr.Resource
}

// hashOf turns a version of the story into what a StorageState holds.
func hashOf(in *Input, gr schema.GroupResource, v string) string {
	if v == migrationapi.Unknown || v == "" {
		return v
	}
	if h, ok := strings.CutPrefix(v, "#"); ok {
		return h
	}
	return wire.StorageVersionHash(gr.Group, v, kindOf(in, gr))
}

func addState(t *testing.T, d *datadriven.TestData, in *Input) {
	gr := parseGR(d.CmdArgs[0].Key)
	var current string
	age := "1m"
	d.MaybeScanArgs(t, "current", &current)
	d.MaybeScanArgs(t, "age", &age)
	dur, err := time.ParseDuration(age)
	if err != nil {
		d.Fatalf(t, "age: %v", err)
	}
	st := State{Current: hashOf(in, gr, current), Heartbeat: in.Now.Add(-dur)}
	for _, v := range vals(d, "persisted") {
		st.Persisted = append(st.Persisted, hashOf(in, gr, v))
	}
	in.States[gr] = st
}

func addStorageVersion(t *testing.T, d *datadriven.TestData, in *Input) {
	gr := parseGR(d.CmdArgs[0].Key)
	gv := func(v string) string { return schema.GroupVersion{Group: gr.Group, Version: v}.String() }
	e := Encodings{Servers: map[string]string{}}
	var common string
	if d.MaybeScanArgs(t, "common", &common) {
		e.Common = gv(common)
	}
	for _, s := range vals(d, "servers") {
		id, v, ok := strings.Cut(s, ":")
		if !ok {
			d.Fatalf(t, "servers: want <id>:<version>, got %q", s)
		}
		e.Servers[id] = gv(v)
	}
	in.StorageVersions[gr] = e
}

func addFieldUse(t *testing.T, d *datadriven.TestData, in *Input) {
	gr := parseGR(d.CmdArgs[0].Key)
	var u FieldUse
	d.ScanArgs(t, "version", &u.Version)
	d.ScanArgs(t, "path", &u.Path)
	d.ScanArgs(t, "introduced", &u.Introduced)
	d.ScanArgs(t, "objects", &u.Objects)
	u.Examples = vals(d, "examples")
	if in.FieldUses == nil {
		in.FieldUses = map[schema.GroupResource][]FieldUse{}
	}
	in.FieldUses[gr] = append(in.FieldUses[gr], u)
}
