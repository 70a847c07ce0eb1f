package schema

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestOpenAPI(t *testing.T) {
	s := compileFile(t, "widget.yaml")
	root := s.OpenAPI()
	specProps := root.Properties["spec"].Properties

	tests := []struct {
		property string
		// want holds the expected JSON of selected keys of the property's schema.
		want map[string]string
	}{
		{"port", map[string]string{"x-kubernetes-int-or-string": `true`, "anyOf": `[{"type":"integer"},{"type":"string"}]`, "type": `null`, "pattern": `"^[a-z]+$"`}},
		{"maxUnavailable", map[string]string{"x-kubernetes-int-or-string": `true`, "anyOf": `[{"type":"integer"},{"type":"string"}]`}},
		{"replicas", map[string]string{"type": `"integer"`, "format": `"int32"`, "default": `1`, "minimum": `0`}},
		{"name", map[string]string{"nullable": `true`, "maxLength": `8`}},
		{"template", map[string]string{"x-kubernetes-embedded-resource": `true`, "type": `"object"`}},
		{"anything", map[string]string{"x-kubernetes-embedded-resource": `true`, "x-kubernetes-preserve-unknown-fields": `true`}},
		{"config", map[string]string{"x-kubernetes-preserve-unknown-fields": `true`}},
		{"ports", map[string]string{"x-kubernetes-list-type": `"map"`, "x-kubernetes-list-map-keys": `["name","protocol"]`}},
		{"tags", map[string]string{"x-kubernetes-list-type": `"set"`}},
		{"labels", map[string]string{"x-kubernetes-map-type": `"granular"`, "additionalProperties": `{"type":"string"}`}},
		{"selector", map[string]string{"x-kubernetes-map-type": `"atomic"`}},
		{"window", map[string]string{"x-kubernetes-validations": `[{"rule":"self.min \u003c= self.max","message":"min must not exceed max"}]`}},
	}
	for _, tc := range tests {
		t.Run(tc.property, func(t *testing.T) {
			prop, ok := specProps[tc.property]
			if !ok {
				t.Fatalf("no property spec.%s", tc.property)
			}
			fields := schemaFields(t, &prop)
			for k, want := range tc.want {
				got := string(fields[k])
				if got == "" {
					got = "null"
				}
				if got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
		})
	}
}

func TestOpenAPIReturnsFreshSchemas(t *testing.T) {
	s := compileFile(t, "widget.yaml")
	first := s.OpenAPI()
	replicas := first.Properties["spec"].Properties["replicas"]
	replicas.Default = int64(42)
	first.Properties["spec"].Properties["replicas"] = replicas
	first.Properties["spec"].Required[0] = "mutated"
	first.Properties["metadata"] = *spec.RefSchema("#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")

	second := s.OpenAPI()
	if got := second.Properties["spec"].Properties["replicas"].Default; got != int64(1) {
		t.Errorf("second OpenAPI() default of spec.replicas = %#v, want 1", got)
	}
	if got := second.Properties["spec"].Required; len(got) != 1 || got[0] != "size" {
		t.Errorf("second OpenAPI() spec.required = %q, want [size]", got)
	}
	if metadata := second.Properties["metadata"]; metadata.Ref.String() != "" {
		t.Errorf("second OpenAPI() metadata has $ref %q", metadata.Ref.String())
	}
	obj := parseObject(t, `{spec: {size: small}}`)
	s.Default(obj)
	assertJSONEqual(t, obj, parseObject(t, `{spec: {size: small, replicas: 1}}`))
}

// TestOpenAPIFeedsServerSideApply checks that the schema builds a server-side apply type
// converter, which reads the list and map type extensions.
func TestOpenAPIFeedsServerSideApply(t *testing.T) {
	s := compileFile(t, "widget.yaml")
	root := s.OpenAPI()
	root.AddExtension("x-kubernetes-group-version-kind", []interface{}{
		map[string]interface{}{"group": "example.com", "version": "v1", "kind": "Widget"},
	})
	// As a document builder does, spell out the implicit apiVersion, kind and metadata of
	// the embedded resource (a builder refers to ObjectMeta; an open object does here).
	metadata := new(spec.Schema).Typed("object", "")
	metadata.AddExtension("x-kubernetes-preserve-unknown-fields", true)
	template := root.Properties["spec"].Properties["template"]
	template.SetProperty("apiVersion", *spec.StringProperty()).SetProperty("kind", *spec.StringProperty()).SetProperty("metadata", *metadata)
	root.Properties["spec"].Properties["template"] = template
	tc, err := managedfields.NewTypeConverter(map[string]*spec.Schema{"com.example.v1.Widget": root}, false)
	if err != nil {
		t.Fatalf("NewTypeConverter: %v", err)
	}
	obj := &unstructured.Unstructured{Object: parseObject(t, validWidget)}
	if _, err := tc.ObjectToTyped(obj); err != nil {
		t.Errorf("ObjectToTyped: %v", err)
	}
	// A duplicate list-map key is refused by the typed representation.
	dup := &unstructured.Unstructured{Object: parseObject(t, validWidget)}
	if err := unstructured.SetNestedSlice(dup.Object, []interface{}{
		map[string]interface{}{"name": "http", "protocol": "TCP"},
		map[string]interface{}{"name": "http", "protocol": "TCP"},
	}, "spec", "ports"); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.ObjectToTyped(dup); err == nil {
		t.Error("ObjectToTyped accepted duplicate keys of a list-type map")
	}
}

// schemaFields returns the schema's top-level JSON fields, extensions included.
func schemaFields(t *testing.T, s *spec.Schema) map[string]json.RawMessage {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	return fields
}
