package schema

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// validWidget is an object that satisfies testdata/widget.yaml as it stands.
const validWidget = `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: default}
spec:
  size: small
  replicas: 3
  port: http
  maxUnavailable: 25%
  name: short
  deep: {a: {b: {c: {d: x, e: 10}}}}
  template:
    apiVersion: v1
    kind: Pod
    metadata: {name: p, labels: {app: w}}
    spec: {image: nginx}
  anything: {apiVersion: v1, kind: ConfigMap, data: {a: b}}
  ports: [{name: http, protocol: TCP, number: 80}, {name: http, protocol: UDP, number: 80}]
  tags: [a, b]
  labels: {team: x}
  selector: {matchLabels: {app: w}}
  config: {known: k, free: {form: [1, 2]}}
  steps: [{name: build, timeout: 1m, retries: 2}]
  window: {min: 1, max: 2}
status:
  phase: Ready
  conditions: [{type: Ready, status: "True"}]
`

func set(value interface{}, path ...string) func(map[string]interface{}) {
	return func(obj map[string]interface{}) {
		if err := unstructured.SetNestedField(obj, value, path...); err != nil {
			panic(err)
		}
	}
}

func remove(path ...string) func(map[string]interface{}) {
	return func(obj map[string]interface{}) { unstructured.RemoveNestedField(obj, path...) }
}

func TestValidate(t *testing.T) {
	s := compileFile(t, "widget.yaml")
	const skippedRules = `<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`
	tests := []struct {
		name   string
		mutate []func(map[string]interface{})
		want   []string // sorted
	}{{
		name: "valid",
	}, {
		name:   "integer given a string",
		mutate: []func(map[string]interface{}){set("three", "spec", "replicas")},
		want: []string{
			skippedRules,
			`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`,
		},
	}, {
		name:   "below minimum",
		mutate: []func(map[string]interface{}){set(int64(-1), "spec", "replicas")},
		want:   []string{`spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`},
	}, {
		name:   "required field missing",
		mutate: []func(map[string]interface{}){remove("spec", "size")},
		want:   []string{skippedRules, `spec.size: Required value`},
	}, {
		name:   "enum",
		mutate: []func(map[string]interface{}){set("huge", "spec", "size")},
		want:   []string{skippedRules, `spec.size: Unsupported value: "huge": supported values: "small", "medium", "large"`},
	}, {
		name:   "null where not nullable",
		mutate: []func(map[string]interface{}){set(nil, "spec", "size")},
		want: []string{
			skippedRules,
			`spec.size: Invalid value: "null": spec.size in body must be of type string: "null"`,
			`spec.size: Unsupported value: null: supported values: "small", "medium", "large"`,
		},
	}, {
		name:   "null where nullable",
		mutate: []func(map[string]interface{}){set(nil, "spec", "name")},
	}, {
		name:   "too long",
		mutate: []func(map[string]interface{}){set("much-too-long", "spec", "name")},
		want:   []string{skippedRules, `spec.name: Too long: may not be more than 8 bytes`},
	}, {
		name:   "deeply nested maximum",
		mutate: []func(map[string]interface{}){set(int64(11), "spec", "deep", "a", "b", "c", "e")},
		want:   []string{`spec.deep.a.b.c.e: Invalid value: 11: spec.deep.a.b.c.e in body should be less than or equal to 10`},
	}, {
		name:   "int-or-string given an integer",
		mutate: []func(map[string]interface{}){set(int64(8080), "spec", "port"), set(int64(1), "spec", "maxUnavailable")},
	}, {
		name:   "int-or-string string failing its pattern",
		mutate: []func(map[string]interface{}){set("HTTP", "spec", "port")},
		want:   []string{`spec.port: Invalid value: "HTTP": spec.port in body should match '^[a-z]+$'`},
	}, {
		name:   "int-or-string given a number and a boolean",
		mutate: []func(map[string]interface{}){set(1.5, "spec", "maxUnavailable"), set(true, "spec", "port")},
		want: []string{
			`<nil>: Invalid value: "": "spec.port" must validate at least one schema (anyOf)`,
			skippedRules,
			`spec.maxUnavailable: Invalid value: "number": spec.maxUnavailable in body must be of type integer,string: "number"`,
			`spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`,
			`spec.port: Invalid value: "boolean": spec.port in body must be of type integer: "boolean"`,
		},
	}, {
		name:   "embedded resource without apiVersion and kind",
		mutate: []func(map[string]interface{}){remove("spec", "template", "apiVersion"), remove("spec", "template", "kind")},
		want:   []string{skippedRules, `spec.template.apiVersion: Required value`, `spec.template.kind: Required value`},
	}, {
		name:   "embedded resource with a bad kind and apiVersion",
		mutate: []func(map[string]interface{}){set("Not A Kind", "spec", "template", "kind"), set("a/b/c", "spec", "template", "apiVersion")},
		want: []string{
			`spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`,
			`spec.template.kind: Invalid value: "Not A Kind": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
		},
	}, {
		name:   "embedded resource with invalid ObjectMeta",
		mutate: []func(map[string]interface{}){set(map[string]interface{}{"app": "not valid!"}, "spec", "template", "metadata", "labels"), set("a/b", "spec", "template", "metadata", "name")},
		want: []string{
			`spec.template.metadata.labels: Invalid value: "not valid!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
			`spec.template.metadata.name: Invalid value: "a/b": may not contain '/'`,
		},
	}, {
		name:   "embedded resource with malformed metadata",
		mutate: []func(map[string]interface{}){set("x", "spec", "template", "metadata")},
		want:   []string{`spec.template.metadata: Invalid value: "x": json: cannot unmarshal string into Go value of type v1.ObjectMeta`},
	}, {
		name:   "preserved embedded resource without kind",
		mutate: []func(map[string]interface{}){remove("spec", "anything", "kind")},
		want:   []string{skippedRules, `spec.anything.kind: Required value`},
	}, {
		name:   "duplicate list-map keys",
		mutate: []func(map[string]interface{}){set([]interface{}{map[string]interface{}{"name": "http", "protocol": "TCP"}, map[string]interface{}{"name": "http", "protocol": "TCP", "number": int64(81)}}, "spec", "ports")},
		want:   []string{`spec.ports[1]: Duplicate value: {"name":"http","protocol":"TCP"}`},
	}, {
		name:   "duplicate set elements",
		mutate: []func(map[string]interface{}){set([]interface{}{"a", "b", "a", "b", "a"}, "spec", "tags")},
		want:   []string{`spec.tags[2]: Duplicate value: "a"`, `spec.tags[3]: Duplicate value: "b"`},
	}, {
		name:   "duplicate list-map key in status",
		mutate: []func(map[string]interface{}){set([]interface{}{map[string]interface{}{"type": "Ready"}, map[string]interface{}{"type": "Ready"}}, "status", "conditions")},
		want:   []string{`status.conditions[1]: Duplicate value: {"type":"Ready"}`},
	}, {
		name:   "map values",
		mutate: []func(map[string]interface{}){set(map[string]interface{}{"team": int64(1)}, "spec", "labels")},
		want:   []string{skippedRules, `spec.labels.team: Invalid value: "integer": spec.labels.team in body must be of type string: "integer"`},
	}, {
		name:   "x-kubernetes-validations rule",
		mutate: []func(map[string]interface{}){set(int64(5), "spec", "window", "min")},
		want:   []string{`spec.window: Invalid value: min must not exceed max`},
	}, {
		name: "top-level metadata is the caller's",
		mutate: []func(map[string]interface{}){
			set("Not_A_Valid/Name", "metadata", "name"),
			set(map[string]interface{}{"bad key!": "bad value!"}, "metadata", "labels"),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := parseObject(t, validWidget)
			for _, m := range tc.mutate {
				m(obj)
			}
			got := errorStrings(s.Validate(t.Context(), obj))
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Validate:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	s, err := Compile(t.Context(), parseProps(t, `
type: object
properties:
  spec:
    type: object
    properties:
      level:
        type: integer
        x-kubernetes-validations:
        - rule: self >= oldSelf
          message: level may not decrease
      tags:
        type: array
        x-kubernetes-list-type: set
        items: {type: string}
      mode: {type: string, enum: [fast, safe]}
      owner:
        type: string
        x-kubernetes-validations:
        - rule: self.startsWith("team-")
      items:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [key]
        items:
          type: object
          required: [key]
          properties:
            key: {type: string}
            size: {type: integer, maximum: 10}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		old, obj string
		want     []string
	}{
		{"transition rule holds", `{spec: {level: 1}}`, `{spec: {level: 2}}`, nil},
		{"transition rule broken", `{spec: {level: 2}}`, `{spec: {level: 1}}`, []string{`spec.level: Invalid value: 1: level may not decrease`}},
		{"duplicates introduced", `{spec: {tags: [a]}}`, `{spec: {tags: [a, a]}}`, []string{`spec.tags[1]: Duplicate value: "a"`}},
		{"duplicates kept from old", `{spec: {tags: [a, a]}}`, `{spec: {tags: [a, a, b]}}`, nil},
		// Ratcheting: invalid values the update leaves alone pass; changed ones do not.
		{"unchanged invalid enum", `{spec: {mode: slow, level: 1}}`, `{spec: {mode: slow, level: 2}}`, nil},
		{"changed invalid enum", `{spec: {mode: slow}}`, `{spec: {mode: slower}}`, []string{
			`spec.mode: Unsupported value: "slower": supported values: "fast", "safe"`,
			`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
		}},
		{"unchanged rule failure", `{spec: {owner: bob, level: 1}}`, `{spec: {owner: bob, level: 2}}`, nil},
		{"changed rule failure", `{spec: {owner: bob}}`, `{spec: {owner: alice}}`, []string{`spec.owner: Invalid value: "alice": failed rule: self.startsWith("team-")`}},
		{"unchanged map-list item", `{spec: {items: [{key: a, size: 20}]}}`, `{spec: {items: [{key: b, size: 1}, {key: a, size: 20}]}}`, nil},
		{"changed map-list item", `{spec: {items: [{key: a, size: 20}]}}`, `{spec: {items: [{key: a, size: 30}]}}`, []string{`spec.items[0].size: Invalid value: 30: spec.items[0].size in body should be less than or equal to 10`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errorStrings(s.ValidateUpdate(t.Context(), parseObject(t, tc.obj), parseObject(t, tc.old)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("ValidateUpdate:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	// Without ratcheting (CRDValidationRatcheting off), unchanged invalid values are
	// refused too; transition rules and old duplicates are as with it.
	for _, tc := range []struct {
		name     string
		old, obj string
		want     []string
	}{
		{"unchanged invalid enum", `{spec: {mode: slow, level: 1}}`, `{spec: {mode: slow, level: 2}}`, []string{
			`spec.mode: Unsupported value: "slow": supported values: "fast", "safe"`,
			`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
		}},
		{"unchanged rule failure", `{spec: {owner: bob, level: 1}}`, `{spec: {owner: bob, level: 2}}`, []string{`spec.owner: Invalid value: "bob": failed rule: self.startsWith("team-")`}},
		{"unchanged map-list item", `{spec: {items: [{key: a, size: 20}]}}`, `{spec: {items: [{key: a, size: 20}]}}`, []string{`spec.items[0].size: Invalid value: 20: spec.items[0].size in body should be less than or equal to 10`}},
		{"transition rule broken", `{spec: {level: 2}}`, `{spec: {level: 1}}`, []string{`spec.level: Invalid value: 1: level may not decrease`}},
		{"duplicates kept from old", `{spec: {tags: [a, a]}}`, `{spec: {tags: [a, a, b]}}`, nil},
	} {
		got := errorStrings(s.ValidateUpdateWithoutRatcheting(t.Context(), parseObject(t, tc.obj), parseObject(t, tc.old)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("ValidateUpdateWithoutRatcheting, %s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// On create, transition rules are not evaluated and set uniqueness always applies.
	if got := errorStrings(s.Validate(t.Context(), parseObject(t, `{spec: {level: 1, tags: [a, a]}}`))); !slices.Equal(got, []string{`spec.tags[1]: Duplicate value: "a"`}) {
		t.Errorf("Validate = %q", got)
	}
}

// TestExtensionsBelowArraysAndMaps checks that embedded resources and list types are found
// wherever they sit on the schema's spine, not only under properties.
func TestExtensionsBelowArraysAndMaps(t *testing.T) {
	s, err := Compile(t.Context(), parseProps(t, `
type: object
properties:
  spec:
    type: object
    properties:
      resources:
        type: array
        items:
          type: object
          x-kubernetes-embedded-resource: true
          x-kubernetes-preserve-unknown-fields: true
      groups:
        type: object
        additionalProperties:
          type: array
          x-kubernetes-list-type: map
          x-kubernetes-list-map-keys: [id]
          items:
            type: object
            properties:
              id: {type: integer}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	obj := parseObject(t, `{spec: {resources: [{apiVersion: v1, metadata: {name: a, extra: 1}}], groups: {g: [{id: 1}, {id: 1}]}}}`)
	if got, want := s.Prune(obj), []string{"spec.resources[0].metadata.extra"}; !slices.Equal(got, want) {
		t.Errorf("Prune = %q, want %q", got, want)
	}
	got := errorStrings(s.Validate(t.Context(), obj))
	slices.Sort(got)
	want := []string{`spec.groups[g][1]: Duplicate value: {"id":1}`, `spec.resources[0].kind: Required value`}
	if !slices.Equal(got, want) {
		t.Errorf("Validate:\n got %q\nwant %q", got, want)
	}
}
