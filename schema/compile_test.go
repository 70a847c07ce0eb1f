package schema

import (
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCompileRefusesInvalidSchemas(t *testing.T) {
	const prefix = "spec.validation.openAPIV3Schema"
	tests := []struct {
		name   string
		schema string
		want   []string
	}{{
		name:   "missing type of an object field",
		schema: `{type: object, properties: {spec: {properties: {a: {type: string}}}}}`,
		want:   []string{prefix + ".properties[spec].type: Required value: must not be empty for specified object fields"},
	}, {
		name:   "missing type of array items",
		schema: `{type: object, properties: {spec: {type: array, items: {properties: {a: {type: string}}}}}}`,
		want:   []string{prefix + ".properties[spec].items.type: Required value: must not be empty for specified array items"},
	}, {
		name:   "root not an object",
		schema: `{type: string}`,
		want:   []string{prefix + `.type: Invalid value: "string": must be object at the root`},
	}, {
		name:   "array without items",
		schema: `{type: object, properties: {spec: {type: object, properties: {a: {type: array}}}}}`,
		want:   []string{prefix + ".properties[spec].properties[a].items: Required value: must be specified"},
	}, {
		name:   "properties and additionalProperties",
		schema: `{type: object, properties: {spec: {type: object, properties: {a: {type: string}}, additionalProperties: {type: string}}}}`,
		want:   []string{prefix + ".properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"},
	}, {
		name:   "additionalProperties at the root",
		schema: `{type: object, additionalProperties: {type: string}}`,
		want:   []string{prefix + ".additionalProperties: Forbidden: must not be used at the root"},
	}, {
		name:   "$ref and definitions",
		schema: `{type: object, definitions: {x: {type: string}}, properties: {spec: {type: object, properties: {a: {$ref: "#/definitions/x"}}}}}`,
		want: []string{
			prefix + ".definitions: Forbidden: definitions is not supported",
			prefix + ".properties[spec].properties[a].$ref: Forbidden: $ref is not supported",
		},
	}, {
		name:   "items as an array",
		schema: `{type: object, properties: {spec: {type: array, items: [{type: string}, {type: integer}]}}}`,
		want:   []string{prefix + ".properties[spec].items: Forbidden: items must be a schema object and not an array"},
	}, {
		name:   "unknown type",
		schema: `{type: object, properties: {spec: {type: int}}}`,
		want:   []string{prefix + `.properties[spec].type: Unsupported value: "int": supported values: "array", "boolean", "integer", "number", "object", "string"`},
	}, {
		name:   "type in a value validation",
		schema: `{type: object, properties: {spec: {type: object, anyOf: [{type: object, properties: {a: {type: string}}}]}}}`,
		want: []string{
			prefix + ".properties[spec].anyOf[0].properties[a].type: Forbidden: must be empty to be structural",
			prefix + ".properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
		},
	}, {
		name:   "field only specified in a value validation",
		schema: `{type: object, properties: {spec: {type: object}}, allOf: [{properties: {status: {minProperties: 1}}}]}`,
		want:   []string{prefix + ".properties[status]: Required value: because it is defined in spec.validation.openAPIV3Schema.allOf[0].properties[status]"},
	}, {
		name:   "top-level metadata beyond name and generateName",
		schema: `{type: object, properties: {metadata: {type: object, properties: {labels: {type: object}}}}}`,
		want:   []string{prefix + ".properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"},
	}, {
		name:   "embedded resource without properties",
		schema: `{type: object, properties: {spec: {type: object, x-kubernetes-embedded-resource: true}}}`,
		want:   []string{prefix + ".properties[spec].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"},
	}, {
		name:   "int-or-string with preserve-unknown-fields",
		schema: `{type: object, properties: {spec: {x-kubernetes-int-or-string: true, x-kubernetes-preserve-unknown-fields: true}}}`,
		want:   []string{prefix + ".properties[spec].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"},
	}, {
		name:   "list-type map without keys on scalar items",
		schema: `{type: object, properties: {spec: {type: array, x-kubernetes-list-type: map, items: {type: string}}}}`,
		want: []string{
			prefix + `.properties[spec].items.type: Invalid value: "string": must be object if parent array's x-kubernetes-list-type is map`,
			prefix + ".properties[spec].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
		},
	}, {
		name:   "list-map key not an item property",
		schema: `{type: object, properties: {spec: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {j: {type: string}}}}}}`,
		want:   []string{prefix + `.properties[spec].x-kubernetes-list-map-keys: Invalid value: ["k"]: entries must all be names of item properties`},
	}, {
		name:   "list-map key not a scalar",
		schema: `{type: object, properties: {spec: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: object}}}}}}`,
		want:   []string{prefix + `.properties[spec].items.properties[k].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map`},
	}, {
		name:   "list-map keys without list-type map",
		schema: `{type: object, properties: {spec: {type: array, x-kubernetes-list-type: set, x-kubernetes-list-map-keys: [k], items: {type: string}}}}`,
		want:   []string{prefix + `.properties[spec].x-kubernetes-list-type: Invalid value: "set": must be map if x-kubernetes-list-map-keys is non-empty`},
	}, {
		name:   "unknown list-type on a non-array",
		schema: `{type: object, properties: {spec: {type: object, x-kubernetes-list-type: bag}}}`,
		want: []string{
			prefix + `.properties[spec].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified`,
			prefix + `.properties[spec].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map"`,
		},
	}, {
		name:   "unknown map-type",
		schema: `{type: object, properties: {spec: {type: object, x-kubernetes-map-type: weird}}}`,
		want:   []string{prefix + `.properties[spec].x-kubernetes-map-type: Unsupported value: "weird": supported values: "atomic", "granular"`},
	}, {
		name:   "defaults in top-level TypeMeta and ObjectMeta",
		schema: `{type: object, properties: {kind: {type: string, default: Widget}, metadata: {type: object, properties: {name: {type: string, default: w}}}}}`,
		want: []string{
			prefix + ".properties[kind].default: Forbidden: must not be set in top-level kind",
			prefix + ".properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata",
		},
	}, {
		name:   "default of the wrong type",
		schema: `{type: object, properties: {spec: {type: object, properties: {a: {type: integer, default: "x"}}}}}`,
		want:   []string{prefix + `.properties[spec].properties[a].default: Invalid value: "string":  in body must be of type integer: "string"`},
	}, {
		name:   "default with unknown fields",
		schema: `{type: object, properties: {spec: {type: object, default: {x: 1}, properties: {a: {type: integer}}}}}`,
		want:   []string{prefix + `.properties[spec].default: Invalid value: {"x":1}: must not have unknown fields`},
	}, {
		name:   "default violating a value validation",
		schema: `{type: object, properties: {spec: {type: object, properties: {a: {type: integer, maximum: 3, default: 5}}}}}`,
		want:   []string{prefix + `.properties[spec].properties[a].default: Invalid value: 5:  in body should be less than or equal to 3`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(t.Context(), parseProps(t, tc.schema), field.NewPath("spec", "validation", "openAPIV3Schema"))
			if err == nil {
				t.Fatalf("Compile succeeded, want errors %q", tc.want)
			}
			if s != nil {
				t.Errorf("Compile returned a schema with error %v", err)
			}
			if !errors.Is(err, ErrInvalidSchema) {
				t.Errorf("error %v does not match ErrInvalidSchema", err)
			}
			var invalid *InvalidSchemaError
			if !errors.As(err, &invalid) {
				t.Fatalf("error %v is no *InvalidSchemaError", err)
			}
			if got := errorStrings(invalid.Errors); !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCompileErrorMessage(t *testing.T) {
	_, err := Compile(t.Context(), parseProps(t, `{type: object, properties: {spec: {properties: {a: {type: string}}}}}`), field.NewPath("spec", "validation", "openAPIV3Schema"))
	want := "invalid schema: spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestCompileAcceptsStructuralSchemas(t *testing.T) {
	tests := []struct {
		name   string
		schema string
	}{
		{"minimal", `{type: object}`},
		{"everything preserved", `{type: object, x-kubernetes-preserve-unknown-fields: true}`},
		{"metadata restricting name", `{type: object, properties: {metadata: {type: object, properties: {name: {type: string, maxLength: 10}}}}}`},
		{"int-or-string in allOf form", `{type: object, properties: {spec: {x-kubernetes-int-or-string: true, allOf: [{anyOf: [{type: integer}, {type: string}]}, {maxLength: 3}]}}}`},
		{"preserved embedded resource", `{type: object, properties: {spec: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}}}`},
		{"additionalProperties true with properties", `{type: object, properties: {spec: {type: object, properties: {a: {type: string}}, additionalProperties: true}}}`},
		{"unknown format ignored", `{type: object, properties: {spec: {type: string, format: no-such-format}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(t.Context(), parseProps(t, tc.schema), nil)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if s == nil {
				t.Fatal("Compile returned a nil schema")
			}
		})
	}
}

func TestCompileSharesNothingWithProps(t *testing.T) {
	props := parseProps(t, `{type: object, properties: {spec: {type: object, required: [a], properties: {a: {type: object, default: {b: x}, properties: {b: {type: string}}}}}}}`)
	s, err := Compile(t.Context(), props, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Changing the props after Compile must not change the compiled schema.
	props.Properties["spec"].Properties["a"].Default.Raw = []byte(`{"b":"changed"}`)
	props.Properties["spec"].Required[0] = "b"
	delete(props.Properties, "spec")
	if errs := s.Validate(t.Context(), parseObject(t, `{spec: {}}`)); len(errs) != 1 || errs[0].Error() != "spec.a: Required value" {
		t.Errorf("Validate = %v, want spec.a required", errs)
	}

	obj := parseObject(t, `{spec: {}}`)
	s.Default(obj)
	if got := obj["spec"].(map[string]interface{})["a"].(map[string]interface{})["b"]; got != "x" {
		t.Errorf("defaulted spec.a.b = %v, want x", got)
	}
}

func TestNilSchema(t *testing.T) {
	s, err := Compile(t.Context(), nil, field.NewPath("x"))
	if err != nil || s != nil {
		t.Fatalf("Compile(nil) = %v, %v; want nil, nil", s, err)
	}
	obj := parseObject(t, `{apiVersion: v1, kind: Thing, spec: {anything: [1, null, {x: y}]}}`)
	want := parseObject(t, `{apiVersion: v1, kind: Thing, spec: {anything: [1, null, {x: y}]}}`)
	if pruned := s.Prune(obj); pruned != nil {
		t.Errorf("Prune = %q, want nil", pruned)
	}
	s.Default(obj)
	if errs := s.Validate(t.Context(), obj); errs != nil {
		t.Errorf("Validate = %v, want nil", errs)
	}
	if errs := s.ValidateUpdate(t.Context(), obj, want); errs != nil {
		t.Errorf("ValidateUpdate = %v, want nil", errs)
	}
	if got := s.OpenAPI(); got != nil {
		t.Errorf("OpenAPI = %v, want nil", got)
	}
	assertJSONEqual(t, obj, want)
}
