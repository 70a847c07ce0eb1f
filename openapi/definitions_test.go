package openapi

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestModelName(t *testing.T) {
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		want string
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "io.k8s.api.core.v1.Namespace"},
		{schema.GroupVersionKind{Version: "v1", Kind: "NamespaceList"}, "io.k8s.api.core.v1.NamespaceList"},
		{schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, "io.k8s.api.coordination.v1.Lease"},
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"},
		{schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}, "com.example.stable.v1.CronTab"},
		{schema.GroupVersionKind{Group: "example", Version: "v2alpha1", Kind: "Thing"}, "example.v2alpha1.Thing"},
		// Kinds without a Go type, and metav1 kinds registered everywhere, are not named
		// after a Go type.
		{schema.GroupVersionKind{Version: "v1", Kind: "Widget"}, "io.k8s.api.core.v1.Widget"},
		{schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "WatchEvent"}, "io.k8s.coordination.v1.WatchEvent"},
	} {
		if got := modelName(tc.gvk); got != tc.want {
			t.Errorf("modelName(%v) = %q, want %q", tc.gvk, got, tc.want)
		}
	}
}

func TestCamel(t *testing.T) {
	for in, want := range map[string][2]string{
		"core":               {"Core", "core"},
		"stable.example.com": {"StableExampleCom", "stableExampleCom"},
		"internal.apiserver": {"InternalApiserver", "internalApiserver"},
		"v1beta1":            {"V1beta1", "v1beta1"},
		"my-group.io":        {"MyGroupIo", "myGroupIo"},
	} {
		if got := [2]string{camel(in, true), camel(in, false)}; got != want {
			t.Errorf("camel(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestDowngradeToV2(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want string
	}{{
		name: "junctors go",
		in:   `{"type":"string","anyOf":[{"enum":["a"]}],"oneOf":[{"enum":["b"]}],"allOf":[{"maxLength":3}],"not":{"enum":["c"]}}`,
		want: `{"type":"string"}`,
	}, {
		name: "int-or-string is untyped",
		in:   `{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}`,
		want: `{"x-kubernetes-int-or-string":true}`,
	}, {
		name: "nullable fields are untyped and not required",
		in:   `{"type":"object","required":["a","b"],"properties":{"a":{"type":"object","nullable":true,"properties":{"x":{"type":"string"}}},"b":{"type":"string"}}}`,
		want: `{"type":"object","required":["b"],"properties":{"a":{},"b":{"type":"string"}}}`,
	}, {
		name: "nullable additional properties drop required",
		in:   `{"type":"object","required":["a"],"additionalProperties":{"type":"string","nullable":true}}`,
		want: `{"type":"object","additionalProperties":{}}`,
	}, {
		name: "preserved objects lose type and properties",
		in:   `{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{"type":"string"}}}`,
		want: `{"x-kubernetes-preserve-unknown-fields":true}`,
	}, {
		name: "arrays of preserved items lose their item type",
		in:   `{"type":"array","items":{"type":"array","x-kubernetes-preserve-unknown-fields":true,"items":{"type":"string"}}}`,
		want: `{"type":"array","items":{"x-kubernetes-preserve-unknown-fields":true}}`,
	}, {
		name: "nested schemas are downgraded",
		in:   `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"array","items":{"type":"string","nullable":true,"default":"d"}}}}}`,
		want: `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"array","items":{"default":"d"}}}}}`,
	}, {
		name: "what v2 can say stays",
		in:   `{"type":"object","description":"d","required":["a"],"properties":{"a":{"type":"integer","format":"int32","minimum":0,"default":1}},"x-kubernetes-validations":[{"rule":"true"}]}`,
		want: `{"type":"object","description":"d","required":["a"],"properties":{"a":{"type":"integer","format":"int32","minimum":0,"default":1}},"x-kubernetes-validations":[{"rule":"true"}]}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &spec.Schema{}
			if err := json.Unmarshal([]byte(tc.in), s); err != nil {
				t.Fatal(err)
			}
			downgradeToV2(s)
			got, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var gotAny, wantAny any
			if err := json.Unmarshal(got, &gotAny); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &wantAny); err != nil {
				t.Fatal(err)
			}
			if g, w := mustJSON(t, gotAny), mustJSON(t, wantAny); g != w {
				t.Errorf("downgradeToV2(%s)\n got %s\nwant %s", tc.in, g, w)
			}
		})
	}
}

// mustJSON marshals v canonically (sorted keys).
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
