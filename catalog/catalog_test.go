package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"

	"github.com/concordproject/concord/schema"
)

func mustDefault(t testing.TB) *Catalog {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	return c
}

// Default drops the embedded catalog's indentation without checking its syntax, as
// json.Compact would: on that file, and on strings that hold what is whitespace or a
// quote elsewhere, both give the same bytes.
func TestWithoutIndentationIsCompact(t *testing.T) {
	inputs := [][]byte{
		defaultJSON,
		[]byte("{\n  \"a b\": \"x \\\" y\\\\\",\n\t\"c\": [ 1, \"\\\\\" , {\"d\" : \" \\n\\t\"} ]\r\n}\n"),
	}
	for _, in := range inputs {
		var want bytes.Buffer
		if err := json.Compact(&want, in); err != nil {
			t.Fatalf("test input: %v", err)
		}
		if got := withoutIndentation(in); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("withoutIndentation differs from json.Compact:\n got %.200s\nwant %.200s", got, want.Bytes())
		}
	}
}

func TestDefault(t *testing.T) {
	c := mustDefault(t)
	if again := mustDefault(t); again != c {
		t.Error("Default parsed the embedded catalog twice")
	}
	if got := c.BinaryVersion().String(); got != "1.37" {
		t.Errorf("BinaryVersion = %s, want 1.37 (the release of k8s.io/api v0.37)", got)
	}
	if got := c.Releases()[0].String(); got != "1.20" {
		t.Errorf("oldest release = %s, want 1.20", got)
	}
	// Resources come core group first, then by group and plural.
	var order []string
	for _, r := range c.Resources() {
		order = append(order, r.GroupResource().String())
	}
	if want := []string{"bindings", "componentstatuses", "configmaps", "endpoints", "events", "limitranges", "namespaces", "nodes",
		"persistentvolumeclaims", "persistentvolumes", "pods", "podtemplates", "replicationcontrollers", "resourcequotas", "secrets",
		"serviceaccounts", "services", "mutatingadmissionpolicies.admissionregistration.k8s.io"}; !slices.Equal(order[:len(want)], want) {
		t.Errorf("resource order starts %v, want %v", order[:len(want)], want)
	}
	// Events are two resources of one kind in two groups, each with its own storage.
	core, ev := c.Resource("", "events"), c.Resource("events.k8s.io", "events")
	if core == nil || ev == nil {
		t.Fatalf("events missing: core %v, events.k8s.io %v", core, ev)
	}
	for _, r := range []*Resource{core, ev} {
		if r.Names.Kind != "Event" || !r.Namespaced || !slices.Equal(r.Names.ShortNames, []string{"ev"}) || r.Subresources != nil {
			t.Errorf("%s = %+v", r.GroupResource(), r.Names)
		}
		var cols []string
		for _, col := range r.PrinterColumns {
			cols = append(cols, col.Name)
		}
		if want := []string{"Last Seen", "Type", "Reason", "Object", "Message"}; !slices.Equal(cols, want) {
			t.Errorf("%s printer columns %v, want kubectl's %v", r.GroupResource(), cols, want)
		}
	}
	// The groups name the same facts differently (regarding is involvedObject, note is
	// message); each schema has its own group's names only.
	for _, tc := range []struct {
		r          *Resource
		has, lacks []string
	}{
		{core, []string{"involvedObject", "message", "source", "firstTimestamp", "lastTimestamp", "count", "reportingComponent", "eventTime", "series"},
			[]string{"regarding", "note", "deprecatedSource", "reportingController"}},
		{ev, []string{"regarding", "note", "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount", "reportingController", "eventTime", "series"},
			[]string{"involvedObject", "message", "source", "reportingComponent"}},
	} {
		for _, v := range tc.r.Versions {
			for _, f := range tc.has {
				if _, ok := v.Schema.Properties[f]; !ok {
					t.Errorf("%s %s has no %s", tc.r.GroupResource(), v.Name, f)
				}
			}
			for _, f := range tc.lacks {
				if _, ok := v.Schema.Properties[f]; ok {
					t.Errorf("%s %s has %s, a field of the other group", tc.r.GroupResource(), v.Name, f)
				}
			}
		}
	}
	if r := c.Resource("autoscaling", "horizontalpodautoscalers"); r == nil || r.Names.Kind != "HorizontalPodAutoscaler" || !r.Namespaced ||
		r.Names.ListKind != "HorizontalPodAutoscalerList" || r.Names.Singular != "horizontalpodautoscaler" || r.Subresources == nil || r.Subresources.Status == nil {
		t.Errorf("horizontalpodautoscalers = %+v", r)
	}
	if r := c.Resource("", "configmaps"); r == nil || r.Subresources != nil {
		t.Errorf("configmaps have no status, got %+v", r)
	}
	if r := c.Resource("apps", "deployments"); r == nil || r.Subresources == nil || r.Subresources.Scale == nil ||
		r.Subresources.Scale.SpecReplicasPath != ".spec.replicas" || *r.Subresources.Scale.LabelSelectorPath != ".spec.selector" {
		t.Errorf("deployments have a scale subresource, got %+v", r)
	}
	if r := c.Resource("apps", "replicasets"); r == nil || r.Subresources == nil || r.Subresources.Scale == nil || r.Names.ShortNames[0] != "rs" {
		t.Errorf("replicasets have a scale subresource and the short name rs, got %+v", r)
	}
	if r := c.Resource("apps", "statefulsets"); r == nil || r.Subresources == nil || r.Subresources.Scale == nil ||
		*r.Subresources.Scale.LabelSelectorPath != ".spec.selector" || r.Names.ShortNames[0] != "sts" {
		t.Errorf("statefulsets have a scale subresource and the short name sts, got %+v", r)
	}
	// A replication controller's selector is a map of labels, not a LabelSelector: its
	// scale subresource names none.
	if r := c.Resource("", "replicationcontrollers"); r == nil || r.Subresources == nil || r.Subresources.Scale == nil ||
		r.Subresources.Scale.LabelSelectorPath != nil {
		t.Errorf("replicationcontrollers have a scale subresource without a selector, got %+v", r)
	}
	// The extensions group's last resource (Ingresses) was removed in 1.22; its
	// successors, in networking.k8s.io, are the catalog's.
	if c.Resource("extensions", "ingresses") != nil {
		t.Error("found a resource the catalog does not have")
	}
}

// TestDefaultSchemasCompile checks that every schema of the default catalog passes the
// structural checks a served schema must pass.
func TestDefaultSchemasCompile(t *testing.T) {
	for _, r := range mustDefault(t).Resources() {
		for _, v := range r.Versions {
			if v.Schema == nil {
				t.Errorf("%s %s has no schema", r.GroupResource(), v.Name)
			}
			if _, err := schema.Compile(t.Context(), v.Schema, field.NewPath(r.GroupResource().String(), v.Name)); err != nil {
				t.Errorf("%s %s: %v", r.GroupResource(), v.Name, err)
			}
		}
	}
}

// TestDefaultHistory spot-checks the default catalog against Kubernetes' history.
func TestDefaultHistory(t *testing.T) {
	c := mustDefault(t)
	for _, tc := range []struct {
		group, plural, version                    string
		introduced, deprecated, removed, replaced string
	}{
		{"flowcontrol.apiserver.k8s.io", "flowschemas", "v1beta1", "1.20", "1.23", "1.26", "v1beta3"},
		{"flowcontrol.apiserver.k8s.io", "flowschemas", "v1beta2", "1.23", "1.26", "1.29", "v1beta3"},
		{"flowcontrol.apiserver.k8s.io", "flowschemas", "v1beta3", "1.26", "1.29", "1.32", "v1"},
		{"flowcontrol.apiserver.k8s.io", "flowschemas", "v1", "1.29", "", "", ""},
		{"flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "v1", "1.29", "", "", ""},
		{"autoscaling", "horizontalpodautoscalers", "v1", "1.2", "", "", ""},
		{"autoscaling", "horizontalpodautoscalers", "v2beta1", "1.8", "1.22", "1.25", "v2beta2"},
		{"autoscaling", "horizontalpodautoscalers", "v2beta2", "1.12", "1.23", "1.26", "v2"},
		{"autoscaling", "horizontalpodautoscalers", "v2", "1.23", "", "", ""},
		{"batch", "cronjobs", "v1beta1", "1.8", "1.21", "1.25", "v1"},
		{"batch", "cronjobs", "v1", "1.21", "", "", ""},
		{"coordination.k8s.io", "leases", "v1", "1.14", "", "", ""},
		{"coordination.k8s.io", "leasecandidates", "v1alpha1", "1.31", "", "1.32", ""},
		{"coordination.k8s.io", "leasecandidates", "v1alpha2", "1.32", "1.35", "1.38", ""},
		{"coordination.k8s.io", "leasecandidates", "v1beta1", "1.33", "1.36", "1.39", ""},
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", "v1alpha1", "1.26", "1.29", "1.32", ""},
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", "v1beta1", "1.28", "1.31", "1.34", ""},
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", "v1", "1.30", "", "", ""},
		{"admissionregistration.k8s.io", "mutatingadmissionpolicies", "v1", "1.36", "", "", ""},
		{"networking.k8s.io", "servicecidrs", "v1beta1", "1.31", "1.34", "1.37", ""},
		{"networking.k8s.io", "servicecidrs", "v1", "1.33", "", "", ""},
		{"storagemigration.k8s.io", "storageversionmigrations", "v1alpha1", "1.30", "1.33", "1.35", ""},
		{"storagemigration.k8s.io", "storageversionmigrations", "v1beta1", "1.35", "1.37", "1.40", "v1"},
		{"storagemigration.k8s.io", "storageversionmigrations", "v1", "1.37", "", "", ""},
		{"internal.apiserver.k8s.io", "storageversions", "v1alpha1", "1.20", "", "", ""},
		{"", "namespaces", "v1", "1.0", "", "", ""},
		{"", "events", "v1", "1.0", "", "", ""},
		{"events.k8s.io", "events", "v1", "1.19", "", "", ""},
		// k8s.io/api records no replacement for events.k8s.io/v1beta1, and kube-apiserver
		// names none in its warning.
		{"events.k8s.io", "events", "v1beta1", "1.8", "1.22", "1.25", ""},
	} {
		r := c.Resource(tc.group, tc.plural)
		if r == nil {
			t.Errorf("%s.%s missing", tc.plural, tc.group)
			continue
		}
		v := r.Version(tc.version)
		if v == nil {
			t.Errorf("%s.%s %s missing", tc.plural, tc.group, tc.version)
			continue
		}
		got := []string{releaseString(v.Introduced), releaseString(v.Deprecated), releaseString(v.Removed), v.Replacement}
		want := []string{tc.introduced, tc.deprecated, tc.removed, tc.replaced}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s.%s %s: introduced, deprecated, removed, replacement = %q, want %q", tc.plural, tc.group, tc.version, got, want)
		}
	}
	// Several versions in flight at once: at 1.28 flowschemas exist in v1beta3 and
	// v1beta2 (v1beta1 went in 1.26, v1 comes in 1.29).
	fs := c.Resource("flowcontrol.apiserver.k8s.io", "flowschemas")
	var available []string
	for _, v := range fs.Versions {
		if v.AvailableAt(version.MajorMinor(1, 28)) {
			available = append(available, v.Name)
		}
	}
	if strings.Join(available, ",") != "v1beta3,v1beta2" {
		t.Errorf("flowschemas available at 1.28: %v", available)
	}
}

func TestDefaultFeatureGates(t *testing.T) {
	gates := mustDefault(t).FeatureGates()
	for _, tc := range []struct {
		name    featuregate.Feature
		at      string
		enabled bool
		want    featuregate.FeatureSpec
	}{
		{"StorageVersionAPI", "1.32", false, featuregate.FeatureSpec{PreRelease: featuregate.Alpha}},
		{"StorageVersionAPI", "1.33", true, featuregate.FeatureSpec{PreRelease: featuregate.Beta}},
		{"APIServerIdentity", "1.25", false, featuregate.FeatureSpec{PreRelease: featuregate.Alpha}},
		{"APIServerIdentity", "1.26", true, featuregate.FeatureSpec{PreRelease: featuregate.Beta}},
		{"CRDValidationRatcheting", "1.33", true, featuregate.FeatureSpec{PreRelease: featuregate.GA}},
		{"WatchList", "1.33", false, featuregate.FeatureSpec{PreRelease: featuregate.Beta}},
		{"WatchList", "1.34", true, featuregate.FeatureSpec{PreRelease: featuregate.Beta}},
		{"MutatingAdmissionPolicy", "1.36", true, featuregate.FeatureSpec{PreRelease: featuregate.GA}},
	} {
		gate := featuregate.NewVersionedFeatureGate(version.MustParse(tc.at))
		if err := gate.AddVersioned(gates); err != nil {
			t.Fatalf("AddVersioned: %v", err)
		}
		if got := gate.Enabled(tc.name); got != tc.enabled {
			t.Errorf("%s at %s enabled = %v, want %v", tc.name, tc.at, got, tc.enabled)
		}
		if got := gate.GetAll()[tc.name].PreRelease; got != tc.want.PreRelease {
			t.Errorf("%s at %s is %q, want %q", tc.name, tc.at, got, tc.want.PreRelease)
		}
	}
	gates["StorageVersionAPI"][0].Default = true
	if mustDefault(t).FeatureGates()["StorageVersionAPI"][0].Default {
		t.Error("FeatureGates shares its slices with the catalog")
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	c := mustDefault(t)
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, defaultJSON) {
		t.Error("Encode of the default catalog differs from default.json")
	}
	again, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	data2, err := again.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, data2) {
		t.Error("Parse(Encode(c)) encodes differently")
	}
	// Equal schemas are written once and shared after parsing.
	hpa := again.Resource("autoscaling", "horizontalpodautoscalers")
	if hpa.Version("v2beta2").Schema != hpa.Version("v2").Schema {
		t.Error("v2beta2 does not share v2's schema")
	}
}

const smallYAML = `
releases: ["1.29", "1.30", "1.31"]
groups:
- name: example.com
  resources:
  - plural: widgets
    kind: Widget
    shortNames: [wd]
    namespaced: true
    subresources: {status: {}}
    versions:
    - name: v1beta1
      introduced: "1.29"
      deprecated: "1.30"
      removed: "1.32"
      replacement: v1
      schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
    - name: v1
      introduced: "1.30"
      sameSchemaAs: v1beta1
featureGates:
  Widgets:
  - {version: "1.29", default: false, preRelease: ALPHA}
  - {version: "1.31", default: true, preRelease: GA, lockToDefault: true}
`

func TestParseYAMLAndLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(path, []byte(smallYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Resource("example.com", "widgets")
	if r == nil || r.Names.Singular != "widget" || r.Names.ListKind != "WidgetList" || len(r.Versions) != 2 || r.Versions[0].Name != "v1" {
		t.Fatalf("widgets = %+v", r)
	}
	if r.Version("v1").Schema == nil || r.Version("v1").Schema != r.Version("v1beta1").Schema {
		t.Error("sameSchemaAs did not share the schema")
	}
	if s := c.FeatureGates()["Widgets"]; len(s) != 2 || s[1].PreRelease != featuregate.GA || !s[1].LockToDefault {
		t.Errorf("Widgets gate = %+v", s)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// TestParseErrors checks that each kind of mistake is refused with a message that says
// where and what.
func TestParseErrors(t *testing.T) {
	// edit returns smallYAML with from replaced by to.
	edit := func(from, to string) string {
		if !strings.Contains(smallYAML, from) {
			t.Fatalf("smallYAML has no %q", from)
		}
		return strings.Replace(smallYAML, from, to, 1)
	}
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"not yaml", "releases: [", []string{"yaml"}},
		{"unknown field", edit("shortNames: [wd]", "shortNamez: [wd]"), []string{`unknown field "groups[0].resources[0].shortNamez"`}},
		{"no releases", edit(`releases: ["1.29", "1.30", "1.31"]`, `releases: []`), []string{"releases: Required value"}},
		{"release with patch", edit(`"1.30", "1.31"]`, `"1.30.1", "1.31"]`), []string{`releases[1]: Invalid value: "1.30.1": must be a release as major.minor`}},
		{"release not a version", edit(`"1.30", "1.31"]`, `"next", "1.31"]`), []string{`releases[1]: Invalid value: "next"`}},
		{"releases out of order", edit(`"1.30", "1.31"]`, `"1.31", "1.30"]`), []string{"releases must be strictly increasing, but 1.30 follows 1.31"}},
		{"unknown version string", edit(`introduced: "1.29"`, `introduced: "1.x"`), []string{`groups[0].resources[0].versions[0].introduced: Invalid value: "1.x"`}},
		{"removed before introduced", edit(`removed: "1.32"`, `removed: "1.28"`), []string{"resources[widgets.example.com].versions[v1beta1].removed: Invalid value: \"1.28\": must be after introduced (1.29)"}},
		{"removed before deprecated", edit(`removed: "1.32"`, `removed: "1.29"`), []string{"must not be before deprecated (1.30)"}},
		{"deprecated before introduced", edit(`deprecated: "1.30"`, `deprecated: "1.28"`), []string{"must not be before introduced (1.29)"}},
		{"deprecated after newest", edit(`deprecated: "1.30"`, `deprecated: "1.32"`), []string{"a build cannot know a later deprecation"}},
		{"introduced after newest", edit(`introduced: "1.30"`, `introduced: "1.35"`), []string{"versions[v1].introduced: Invalid value: \"1.35\": is after the newest release of the catalog (1.31)"}},
		{"planned removal without deprecation", edit(`      deprecated: "1.30"
      removed: "1.32"
      replacement: v1
`, `      removed: "1.32"
`), []string{"a planned removal needs a deprecation"}},
		{"duplicate versions", edit("- name: v1\n", "- name: v1beta1\n"), []string{`versions[v1beta1].name: Duplicate value: "v1beta1"`}},
		{"bad version name", edit("- name: v1\n", "- name: version1\n"), []string{"must be a Kubernetes API version"}},
		{"no versions", "releases: [\"1.30\"]\ngroups:\n- name: example.com\n  resources:\n  - {plural: widgets, kind: Widget, versions: []}\n", []string{"resources[widgets.example.com].versions: Required value: a resource needs at least one version"}},
		{"no kind", edit("kind: Widget", "kind: \"\""), []string{"kind: Required value"}},
		{"bad plural", edit("plural: widgets", "plural: Widgets"), []string{`plural: Invalid value: "Widgets"`}},
		{"bad replacement", edit("replacement: v1", "replacement: v2"), []string{"replacement: Invalid value: \"v2\": must name another version"}},
		{"sameSchemaAs unknown", edit("sameSchemaAs: v1beta1", "sameSchemaAs: v0"), []string{"sameSchemaAs: Invalid value: \"v0\""}},
		{"schema not an object", edit("        type: object\n        properties:", "        type: string\n        properties:"), []string{`schema.type: Invalid value: "string"`}},
		{"duplicate group", edit("groups:\n", "groups:\n- name: example.com\n  resources: []\n"), []string{`groups[1].name: Duplicate value: "example.com"`}},
		{"feature specs out of order", edit(`{version: "1.31", default: true, preRelease: GA, lockToDefault: true}`, `{version: "1.28", default: true, preRelease: BETA}`), []string{"featureGates[Widgets]", "decreasing order"}},
		{"feature regresses", strings.Replace(edit(`{version: "1.31", default: true, preRelease: GA, lockToDefault: true}`, `{version: "1.31", default: true, preRelease: ALPHA}`),
			"preRelease: ALPHA}", "preRelease: BETA}", 1), []string{"feature \"Widgets\" regresses stability from more stable level to ALPHA in 1.31"}},
		{"feature transition without change", edit(`{version: "1.31", default: true, preRelease: GA, lockToDefault: true}`, `{version: "1.31", default: false, preRelease: ALPHA}`), []string{"transition without stability change"}},
		{"feature unknown stage", edit("preRelease: ALPHA", "preRelease: GAMMA"), []string{`featureGates[Widgets][0].preRelease: Unsupported value: "GAMMA"`}},
		{"feature spec after newest", edit(`version: "1.31", default: true`, `version: "1.32", default: true`), []string{"is after the newest release of the catalog (1.31)"}},
		{"feature without specs", edit("  Widgets:\n  - {version: \"1.29\", default: false, preRelease: ALPHA}\n  - {version: \"1.31\", default: true, preRelease: GA, lockToDefault: true}\n", "  Widgets: []\n"), []string{"featureGates[Widgets]: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse error %v does not wrap ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestNewDoesNotAlias(t *testing.T) {
	releases := []*version.Version{version.MajorMinor(1, 30)}
	resources := []Resource{{Group: "example.com", Names: namesOf("widgets", "Widget"), Versions: []Version{
		{Name: "v1", Lifecycle: Lifecycle{Introduced: version.MajorMinor(1, 30)}},
	}}}
	c, err := New(releases, resources, nil)
	if err != nil {
		t.Fatal(err)
	}
	resources[0].Versions[0].Name = "v2"
	releases[0] = version.MajorMinor(1, 40)
	if c.Resource("example.com", "widgets").Version("v1") == nil || c.BinaryVersion().String() != "1.30" {
		t.Error("New kept the caller's slices")
	}
}

func TestLifecycle(t *testing.T) {
	l := Lifecycle{Introduced: version.MajorMinor(1, 23), Deprecated: version.MajorMinor(1, 26), Removed: version.MajorMinor(1, 29)}
	for _, tc := range []struct {
		at                    uint
		available, deprecated bool
	}{{22, false, false}, {23, true, false}, {26, true, true}, {28, true, true}, {29, false, true}} {
		r := version.MajorMinor(1, tc.at)
		if got := l.AvailableAt(r); got != tc.available {
			t.Errorf("AvailableAt(%s) = %v", r, got)
		}
		if got := l.DeprecatedAt(r); got != tc.deprecated {
			t.Errorf("DeprecatedAt(%s) = %v", r, got)
		}
	}
	if (Lifecycle{Introduced: version.MajorMinor(1, 2)}).DeprecatedAt(version.MajorMinor(1, 40)) {
		t.Error("a version never deprecated is deprecated")
	}
}
