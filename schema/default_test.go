package schema

import (
	"testing"
)

func TestDefault(t *testing.T) {
	s := compileFile(t, "widget.yaml")
	tests := []struct {
		name      string
		obj, want string
	}{{
		name: "absent fields",
		obj:  `{spec: {size: small}}`,
		want: `{spec: {size: small, replicas: 1}}`,
	}, {
		name: "present fields are kept",
		obj:  `{spec: {size: small, replicas: 0}}`,
		want: `{spec: {size: small, replicas: 0}}`,
	}, {
		name: "nested defaults apply inside defaults just set",
		obj:  `{spec: {size: small, deep: {}}}`,
		want: `{spec: {size: small, replicas: 1, deep: {a: {b: {}}}}}`,
	}, {
		name: "deepest default once its parent exists",
		obj:  `{spec: {size: small, deep: {a: {b: {c: {}}}}}}`,
		want: `{spec: {size: small, replicas: 1, deep: {a: {b: {c: {d: dee}}}}}}`,
	}, {
		name: "in array items",
		obj:  `{spec: {size: small, steps: [{name: a}, {name: b, timeout: 1m}], ports: [{name: http}]}}`,
		want: `{spec: {size: small, replicas: 1, steps: [{name: a, timeout: 30s}, {name: b, timeout: 1m}], ports: [{name: http, protocol: TCP}]}}`,
	}, {
		name: "null of a non-nullable field with a default is defaulted",
		obj:  `{spec: {size: small, replicas: null, steps: [{name: a, timeout: null}]}}`,
		want: `{spec: {size: small, replicas: 1, steps: [{name: a, timeout: 30s}]}}`,
	}, {
		name: "null of a non-nullable field without a default is dropped",
		obj:  `{spec: {size: small, tags: null, deep: {a: {b: {c: {e: null}}}}}, status: null}`,
		want: `{spec: {size: small, replicas: 1, deep: {a: {b: {c: {d: dee}}}}}}`,
	}, {
		name: "null of a nullable field is kept",
		obj:  `{spec: {size: small, name: null}}`,
		want: `{spec: {size: small, replicas: 1, name: null}}`,
	}, {
		name: "inside a preserve-unknown-fields subtree",
		obj:  `{spec: {size: small, config: {free: [null]}}}`,
		want: `{spec: {size: small, replicas: 1, config: {known: k, free: [null]}}}`,
	}, {
		name: "top-level metadata untouched",
		obj:  `{metadata: {name: w, labels: null}, spec: {size: small}}`,
		want: `{metadata: {name: w, labels: null}, spec: {size: small, replicas: 1}}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := parseObject(t, tc.obj)
			s.Default(obj)
			assertJSONEqual(t, obj, parseObject(t, tc.want))
			s.Default(obj)
			assertJSONEqual(t, obj, parseObject(t, tc.want)) // idempotent
		})
	}
}

func TestDefaultValuesAreCopies(t *testing.T) {
	s := compileFile(t, "widget.yaml")
	first := parseObject(t, `{spec: {deep: {}}}`)
	s.Default(first)
	// Mutating a defaulted value must not leak into the schema's default.
	first["spec"].(map[string]interface{})["deep"].(map[string]interface{})["a"].(map[string]interface{})["b"].(map[string]interface{})["mutated"] = true

	second := parseObject(t, `{spec: {deep: {}}}`)
	s.Default(second)
	assertJSONEqual(t, second, parseObject(t, `{spec: {replicas: 1, deep: {a: {b: {}}}}}`))
}
