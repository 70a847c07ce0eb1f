package main

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/concordproject/concord/catalog"
)

var generated = sync.OnceValues(generate)

// TestDefaultCatalogIsUpToDate regenerates the catalog and compares it with the one
// committed, so that default.json stays true to k8s.io/api and to this generator.
func TestDefaultCatalogIsUpToDate(t *testing.T) {
	want, err := generated()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../default.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("catalog/default.json is stale: run `go generate ./catalog`")
	}
}

func TestAPIModuleRelease(t *testing.T) {
	v, err := apiModuleRelease()
	if err != nil {
		t.Fatal(err)
	}
	if v.String() != "1.37" {
		t.Errorf("k8s.io/api v0.37.x is release %s, want 1.37", v)
	}
}

// at returns the schema at a path of property names, "[]" for list items and "{}" for
// map values.
func at(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path ...string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for i, p := range path {
		switch {
		case p == "[]" && s.Items != nil && s.Items.Schema != nil:
			s = s.Items.Schema
		case p == "{}" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			s = s.AdditionalProperties.Schema
		default:
			next, ok := s.Properties[p]
			if !ok {
				t.Fatalf("no %s in the schema", strings.Join(path[:i+1], "."))
			}
			s = &next
		}
	}
	return s
}

func defaultSchema(t *testing.T, group, plural, version string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := generated()
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	v := c.Resource(group, plural).Version(version)
	if v == nil || v.Schema == nil {
		t.Fatalf("%s.%s %s has no schema", plural, group, version)
	}
	return v.Schema
}

// asJSON renders a schema compactly for comparison.
func asJSON(t *testing.T, s *apiextensionsv1.JSONSchemaProps) string {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestDefaultSchemas spot-checks schemas derived from real k8s.io/api types.
func TestDefaultSchemas(t *testing.T) {
	cron := defaultSchema(t, "batch", "cronjobs", "v1")
	hpa := defaultSchema(t, "autoscaling", "horizontalpodautoscalers", "v2")
	ns := defaultSchema(t, "", "namespaces", "v1")
	cm := defaultSchema(t, "", "configmaps", "v1")
	lc := defaultSchema(t, "coordination.k8s.io", "leasecandidates", "v1beta1")
	pod := at(t, cron, "spec", "jobTemplate", "spec", "template", "spec")
	for _, tc := range []struct {
		name string
		got  *apiextensionsv1.JSONSchemaProps
		want string
	}{
		{"an object's metadata belongs to the server", at(t, ns, "metadata"), `{"type":"object"}`},
		{"a template's metadata is kept whole", at(t, cron, "spec", "jobTemplate", "metadata"), `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{"TypeMeta is inlined", at(t, cm, "apiVersion"), `{"type":"string"}`},
		{"[]byte", at(t, cm, "binaryData", "{}"), `{"type":"string","format":"byte"}`},
		{"map[string]string", at(t, cm, "data"), `{"type":"object","additionalProperties":{"type":"string"}}`},
		{"*bool", at(t, cm, "immutable"), `{"type":"boolean"}`},
		{"int32", at(t, hpa, "spec", "maxReplicas"), `{"type":"integer","format":"int32"}`},
		{"*int64", at(t, cron, "spec", "startingDeadlineSeconds"), `{"type":"integer","format":"int64"}`},
		{"metav1.Time", at(t, cron, "status", "lastScheduleTime"), `{"type":"string","format":"date-time"}`},
		{"metav1.MicroTime", at(t, lc, "spec", "pingTime"), `{"type":"string","format":"date-time"}`},
		{"resource.Quantity", at(t, pod, "containers", "[]", "resources", "limits", "{}"), `{"x-kubernetes-int-or-string":true}`},
		{"intstr.IntOrString", at(t, pod, "containers", "[]", "livenessProbe", "httpGet", "port"), `{"x-kubernetes-int-or-string":true}`},
		{"float64 is not in these types; enums are strings", at(t, hpa, "spec", "metrics", "[]", "type"), `{"type":"string"}`},
	} {
		if got := asJSON(t, tc.got); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}

	// List and map markers come from the types' source.
	for _, tc := range []struct {
		name      string
		got       *apiextensionsv1.JSONSchemaProps
		listType  string
		mapKeys   []string
		mapType   string
		isDefault bool
	}{
		{name: "+listType=map +listMapKey=name", got: at(t, pod, "containers"), listType: "map", mapKeys: []string{"name"}},
		{name: "two +listMapKey", got: at(t, pod, "containers", "[]", "ports"), listType: "map", mapKeys: []string{"containerPort", "protocol"}},
		{name: "+listType=atomic", got: at(t, hpa, "spec", "metrics"), listType: "atomic"},
		{name: "conditions by type", got: at(t, hpa, "status", "conditions"), listType: "map", mapKeys: []string{"type"}},
		{name: "+structType=atomic on a type", got: at(t, cron, "status", "active", "[]"), mapType: "atomic"},
		{name: "no marker", got: at(t, cm, "data")},
	} {
		var lt, mt string
		if tc.got.XListType != nil {
			lt = *tc.got.XListType
		}
		if tc.got.XMapType != nil {
			mt = *tc.got.XMapType
		}
		if lt != tc.listType || strings.Join(tc.got.XListMapKeys, ",") != strings.Join(tc.mapKeys, ",") || mt != tc.mapType {
			t.Errorf("%s: list type %q keys %v map type %q, want %q %v %q", tc.name, lt, tc.got.XListMapKeys, mt, tc.listType, tc.mapKeys, tc.mapType)
		}
	}
}

// ruleTypes exercise every rule of the schema builder.
type ruleTypes struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Inlined           `json:",inline"`
	*Embedded

	Skipped   string `json:"-"`
	NoTag     string
	Float     float64              `json:"float"`
	Float32   float32              `json:"float32"`
	Uint8     uint8                `json:"uint8"`
	Bytes     []byte               `json:"bytes"`
	Ptr       *int32               `json:"ptr,omitempty"`
	Raw       runtime.RawExtension `json:"raw"`
	Duration  metav1.Duration      `json:"duration"`
	Quantity  resource.Quantity    `json:"quantity"`
	IntOrStr  intstr.IntOrString   `json:"intOrStr"`
	Any       interface{}          `json:"any"`
	Nested    ruleNode             `json:"nested"`
	NestedMap map[string][]int64   `json:"nestedMap"`
	Array     [2]string            `json:"array"`
	FieldsV1  *metav1.FieldsV1     `json:"fieldsV1"`
}

type Inlined struct {
	FromInline string `json:"fromInline"`
}

type Embedded struct {
	FromEmbedded bool `json:"fromEmbedded"`
}

// ruleNode is recursive.
type ruleNode struct {
	Name     string     `json:"name"`
	Children []ruleNode `json:"children"`
}

func TestSchemaRules(t *testing.T) {
	s, err := newSchemaBuilder().object(reflect.TypeFor[ruleTypes]())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"apiVersion":   `{"type":"string"}`,
		"kind":         `{"type":"string"}`,
		"metadata":     `{"type":"object"}`,
		"fromInline":   `{"type":"string"}`,
		"fromEmbedded": `{"type":"boolean"}`,
		"NoTag":        `{"type":"string"}`,
		"float":        `{"type":"number","format":"double"}`,
		"float32":      `{"type":"number","format":"float"}`,
		"uint8":        `{"type":"integer","format":"int32"}`,
		"bytes":        `{"type":"string","format":"byte"}`,
		"ptr":          `{"type":"integer","format":"int32"}`,
		"raw":          `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`,
		"duration":     `{"type":"string"}`,
		"quantity":     `{"x-kubernetes-int-or-string":true}`,
		"intOrStr":     `{"x-kubernetes-int-or-string":true}`,
		"any":          `{"x-kubernetes-preserve-unknown-fields":true}`,
		"nested":       `{"type":"object","properties":{"children":{"type":"array","items":{"type":"object","x-kubernetes-preserve-unknown-fields":true}},"name":{"type":"string"}}}`,
		"nestedMap":    `{"type":"object","additionalProperties":{"type":"array","items":{"type":"integer","format":"int64"}}}`,
		"array":        `{"type":"array","items":{"type":"string"}}`,
		"fieldsV1":     `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`,
	}
	for name, w := range want {
		p, ok := s.Properties[name]
		if !ok {
			t.Errorf("no property %s", name)
			continue
		}
		if got := asJSON(t, &p); got != w {
			t.Errorf("%s: %s, want %s", name, got, w)
		}
	}
	if len(s.Properties) != len(want) {
		t.Errorf("properties %v, want exactly %d", s.Properties, len(want))
	}
}

type withTime struct {
	metav1.ObjectMeta `json:"metadata"`
	When              time.Time `json:"when"`
}

type withIntKeys struct {
	metav1.ObjectMeta `json:"metadata"`
	M                 map[int]string `json:"m"`
}

type withChan struct {
	metav1.ObjectMeta `json:"metadata"`
	C                 chan int `json:"c"`
}

type notAnObject struct {
	Name string `json:"name"`
}

type duplicate struct {
	metav1.ObjectMeta `json:"metadata"`
	A                 string `json:"fromInline"`
	Inlined           `json:",inline"`
}

func TestSchemaRefusals(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[withTime](), "time.Time encodes itself and has no schema rule"},
		{reflect.TypeFor[withIntKeys](), "map keys must be strings"},
		{reflect.TypeFor[withChan](), "no schema rule for chan int"},
		{reflect.TypeFor[notAnObject](), "has no metadata: not an API object"},
		{reflect.TypeFor[duplicate](), `JSON field "fromInline" appears twice`},
	} {
		_, err := newSchemaBuilder().object(tc.typ)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.typ, err, tc.want)
		}
	}
}

// gaWithoutLifecycle is a GA type that lacks APILifecycleIntroduced.
type gaWithoutLifecycle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

func TestLifecycles(t *testing.T) {
	newest := mustRelease(t, "1.37")
	spec := resourceSpec{group: "example.com", plural: "gadgets", versions: []versionSpec{
		{name: "v1", obj: &gaWithoutLifecycle{}},
		{name: "v1beta2", history: &history{introduced: "1.24", deprecated: "1.27", removed: "1.30", replacement: "v1", source: "test"}},
		{name: "v1beta1", history: &history{introduced: "1.20", deprecated: "1.24", removed: "1.27", source: "test"}},
		{name: "v1alpha1", history: &history{introduced: "1.35", deprecated: "1.38", removed: "1.41", source: "test"}},
	}}
	ls, replacements, err := lifecycles(spec, "gaWithoutLifecycle", newest)
	if err != nil {
		t.Fatal(err)
	}
	// A GA version without APILifecycleIntroduced dates from the newest beta's deprecation.
	if got := ls["v1"].Introduced.String(); got != "1.27" {
		t.Errorf("v1 introduced %s, want 1.27", got)
	}
	if replacements["v1beta2"] != "v1" {
		t.Errorf("v1beta2 replacement %q", replacements["v1beta2"])
	}
	// A deprecation after the newest release is not known yet, nor the removal it brings.
	if l := ls["v1alpha1"]; l.Deprecated != nil || l.Removed != nil {
		t.Errorf("v1alpha1 lifecycle %+v knows the future", l)
	}

	spec.versions = spec.versions[:1]
	if _, _, err := lifecycles(spec, "gaWithoutLifecycle", newest); err == nil || !strings.Contains(err.Error(), "no deprecated beta to date it by") {
		t.Errorf("GA without a beta: %v", err)
	}
	spec.versions = []versionSpec{{name: "v1beta1", obj: &gaWithoutLifecycle{}}}
	if _, _, err := lifecycles(spec, "gaWithoutLifecycle", newest); err == nil || !strings.Contains(err.Error(), "a pre-release version without APILifecycleIntroduced") {
		t.Errorf("beta without lifecycle: %v", err)
	}
	spec.versions = []versionSpec{{name: "v1", history: &history{introduced: "1.20"}}}
	if _, _, err := lifecycles(spec, "gaWithoutLifecycle", newest); err == nil || !strings.Contains(err.Error(), "must cite its source") {
		t.Errorf("history without source: %v", err)
	}
}

func mustRelease(t *testing.T, s string) *version.Version {
	t.Helper()
	v, err := version.ParseGeneric(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFeatureGates(t *testing.T) {
	gates, err := featureGates()
	if err != nil {
		t.Fatal(err)
	}
	for name, specs := range concordGates {
		if !reflect.DeepEqual(gates[name], specs) {
			t.Errorf("%s = %v, want Concord's own %v", name, gates[name], specs)
		}
	}
	for _, name := range upstreamGates {
		if len(gates[name]) == 0 {
			t.Errorf("upstream gate %s missing", name)
		}
	}
	// Concord's StorageVersionAPI differs from upstream's, which never left alpha.
	if s := gates["StorageVersionAPI"]; len(s) != 2 || !s[1].Default {
		t.Errorf("StorageVersionAPI = %v", s)
	}
}
