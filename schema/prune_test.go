package schema

import (
	"slices"
	"testing"
)

func TestPrune(t *testing.T) {
	s := compileFile(t, "widget.yaml")
	tests := []struct {
		name       string
		obj, want  string
		wantPruned []string
	}{{
		name: "nothing unknown",
		obj:  validWidget,
		want: validWidget,
	}, {
		name:       "unknown fields at every depth",
		obj:        `{apiVersion: example.com/v1, kind: Widget, extra: 1, spec: {size: small, bogus: {x: 1}, deep: {a: {b: {c: {d: x, z: 1}, w: 2}}}}, status: {phase: Ready, foo: bar}}`,
		want:       `{apiVersion: example.com/v1, kind: Widget, spec: {size: small, deep: {a: {b: {c: {d: x}}}}}, status: {phase: Ready}}`,
		wantPruned: []string{"extra", "spec.bogus", "spec.deep.a.b.c.z", "spec.deep.a.b.w", "status.foo"},
	}, {
		name:       "unknown fields in array items",
		obj:        `{spec: {steps: [{name: a}, {name: b, extra: 1}], ports: [{name: http, x: y}], status: {}}}`,
		want:       `{spec: {steps: [{name: a}, {name: b}], ports: [{name: http}]}}`,
		wantPruned: []string{"spec.ports[0].x", "spec.status", "spec.steps[1].extra"},
	}, {
		name:       "top-level apiVersion, kind and metadata are the caller's",
		obj:        `{apiVersion: v1, kind: Widget, metadata: {name: w, notObjectMeta: 1, labels: {a: b}}}`,
		want:       `{apiVersion: v1, kind: Widget, metadata: {name: w, notObjectMeta: 1, labels: {a: b}}}`,
		wantPruned: nil,
	}, {
		name:       "embedded resource: metadata reduced to ObjectMeta, rest by its schema",
		obj:        `{spec: {template: {apiVersion: v1, kind: Pod, metadata: {name: p, foo: bar, labels: {a: b}}, spec: {image: x, other: 1}, extra: true}}}`,
		want:       `{spec: {template: {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}}, spec: {image: x}}}}`,
		wantPruned: []string{"spec.template.extra", "spec.template.metadata.foo", "spec.template.spec.other"},
	}, {
		name:       "preserved embedded resource keeps everything but unknown metadata",
		obj:        `{spec: {anything: {apiVersion: v1, kind: ConfigMap, data: {a: b}, metadata: {name: c, zzz: 1}}}}`,
		want:       `{spec: {anything: {apiVersion: v1, kind: ConfigMap, data: {a: b}, metadata: {name: c}}}}`,
		wantPruned: []string{"spec.anything.metadata.zzz"},
	}, {
		name: "preserve-unknown-fields subtree",
		obj:  `{spec: {config: {known: k, free: {form: [1, {a: b}]}, other: null}}}`,
		want: `{spec: {config: {known: k, free: {form: [1, {a: b}]}, other: null}}}`,
	}, {
		name:       "additionalProperties values are pruned by their schema",
		obj:        `{spec: {selector: {matchLabels: {a: b}, matchExpressions: []}, labels: {x: y}}}`,
		want:       `{spec: {selector: {matchLabels: {a: b}}, labels: {x: y}}}`,
		wantPruned: []string{"spec.selector.matchExpressions"},
	}, {
		name:       "malformed embedded metadata is left for Validate",
		obj:        `{spec: {template: {apiVersion: v1, kind: Pod, metadata: "x", foo: 1}}}`,
		want:       `{spec: {template: {apiVersion: v1, kind: Pod, metadata: "x"}}}`,
		wantPruned: []string{"spec.template.foo"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := parseObject(t, tc.obj)
			pruned := s.Prune(obj)
			if !slices.Equal(pruned, tc.wantPruned) {
				t.Errorf("Prune returned\n %q\nwant %q", pruned, tc.wantPruned)
			}
			if !slices.IsSorted(pruned) {
				t.Errorf("Prune returned unsorted paths %q", pruned)
			}
			assertJSONEqual(t, obj, parseObject(t, tc.want))
		})
	}
}

func TestPruneEverythingUnderPreservingRoot(t *testing.T) {
	s, err := Compile(t.Context(), parseProps(t, `{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {spec: {type: object, properties: {a: {type: string}}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	obj := parseObject(t, `{anything: 1, spec: {a: x, b: y}}`)
	if got, want := s.Prune(obj), []string{"spec.b"}; !slices.Equal(got, want) {
		t.Errorf("Prune = %q, want %q", got, want)
	}
	assertJSONEqual(t, obj, parseObject(t, `{anything: 1, spec: {a: x}}`))
}
