package schema_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/schema"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// The type walk may only accept what kube-openapi accepts. Random objects, mostly
// valid and some with a wrong type, a null, a float integer, an out-of-range int32, a
// bad date or base64 string or an unknown field here and there, with or without the
// apiVersion, kind and metadata of every object, are generated for
// every version of every catalog resource and for a CRD-like schema; whenever the walk
// accepts one, kube-openapi must find no error.
func TestTypeWalkIsNeverMoreLenientThanOpenAPI(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	var schemas []*apiextensionsv1.JSONSchemaProps
	var names []string
	for _, r := range cat.Resources() {
		for _, v := range r.Versions {
			if v.Schema != nil {
				schemas = append(schemas, v.Schema)
				names = append(names, r.GroupResource().String()+"/"+v.Name)
			}
		}
	}
	crd := mustParseProps(t, `{"type":"object","properties":{"spec":{"type":"object","properties":{
		"size":{"type":"integer","format":"int32"},"mode":{"type":"string","enum":["Fast","Safe"]},"ratio":{"type":"number"},"name":{"type":"string","nullable":true},
		"when":{"type":"string","format":"date-time"},"blob":{"type":"string","format":"byte"},
		"port":{"x-kubernetes-int-or-string":true},"tags":{"type":"array","items":{"type":"string"}},
		"labels":{"type":"object","additionalProperties":{"type":"string"}},
		"free":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
		"any":{"x-kubernetes-preserve-unknown-fields":true}}}}}`)
	schemas, names = append(schemas, crd), append(names, "crd")

	rng := rand.New(rand.NewPCG(7, 11))
	accepted, total := 0, 0
	for i, props := range schemas {
		s, err := schema.Compile(t.Context(), props, nil)
		if err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		if !s.TypesOnly() {
			t.Errorf("%s: the catalog's schemas are expected to constrain types only", names[i])
			continue
		}
		for range 300 {
			g := &generator{rng: rng, spoil: rng.Float64() < 0.5}
			root := s.StructuralForTest()
			obj, _ := g.value(root, 0).(map[string]interface{})
			if obj == nil {
				continue
			}
			// What every object carries, where its schema does not declare it.
			for k, v := range map[string]interface{}{
				"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]interface{}{"name": "w", "labels": map[string]interface{}{"a": "b"}},
			} {
				if _, declared := root.Properties[k]; !declared && rng.IntN(4) > 0 {
					obj[k] = v
				}
			}
			total++
			if !s.TypeValid(obj) {
				continue
			}
			accepted++
			if errs := s.OpenAPIErrors(obj); len(errs) > 0 {
				t.Fatalf("%s: the walk accepted %v, which kube-openapi refuses: %v", names[i], obj, errs)
			}
		}
	}
	t.Logf("the walk accepted %d of %d objects", accepted, total)
	if accepted < total/4 || accepted == total {
		t.Fatalf("the walk accepted %d of %d objects: the generator does not exercise both outcomes", accepted, total)
	}
}

func mustParseProps(t *testing.T, js string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	p := &apiextensionsv1.JSONSchemaProps{}
	if err := json.Unmarshal([]byte(js), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// generator makes a value for a structural schema; with spoil, about one node in 40
// gets something kube-openapi may refuse.
type generator struct {
	rng   *rand.Rand
	spoil bool
}

func (g *generator) value(n *structuralschema.Structural, depth int) interface{} {
	if g.spoil && g.rng.IntN(40) == 0 {
		return []interface{}{nil, "text", int64(7), 2.5, true, []interface{}{}, map[string]interface{}{}}[g.rng.IntN(7)]
	}
	if n.XIntOrString {
		if g.rng.IntN(2) == 0 {
			return "80%"
		}
		return int64(g.rng.IntN(100))
	}
	format := ""
	if n.ValueValidation != nil {
		format = n.ValueValidation.Format
	}
	switch n.Type {
	case "string":
		if n.ValueValidation != nil && len(n.ValueValidation.Enum) > 0 && (!g.spoil || g.rng.IntN(10) > 0) {
			return n.ValueValidation.Enum[g.rng.IntN(len(n.ValueValidation.Enum))].Object
		}
		switch format {
		case "date-time":
			if g.spoil && g.rng.IntN(10) == 0 {
				return "yesterday"
			}
			return "2026-11-21T08:00:00Z"
		case "byte":
			if g.spoil && g.rng.IntN(10) == 0 {
				return "not base64!"
			}
			return "aGVsbG8="
		}
		return fmt.Sprintf("s%d", g.rng.IntN(1000))
	case "integer":
		if g.spoil && g.rng.IntN(10) == 0 {
			return []interface{}{float64(3), int64(1) << 40, 3.5}[g.rng.IntN(3)]
		}
		return int64(g.rng.IntN(1000))
	case "number":
		if g.rng.IntN(2) == 0 {
			return int64(g.rng.IntN(1000))
		}
		return g.rng.Float64() * 100
	case "boolean":
		return g.rng.IntN(2) == 0
	case "array":
		if depth > 6 || n.Items == nil {
			return []interface{}{}
		}
		a := []interface{}{}
		for range g.rng.IntN(3) {
			a = append(a, g.value(n.Items, depth+1))
		}
		return a
	case "object", "":
		m := map[string]interface{}{}
		if depth > 6 {
			return m
		}
		for k := range n.Properties {
			if g.rng.IntN(10) < 7 {
				p := n.Properties[k]
				m[k] = g.value(&p, depth+1)
			}
		}
		if ap := n.AdditionalProperties; ap != nil && ap.Structural != nil {
			for i := range g.rng.IntN(3) {
				m[fmt.Sprintf("k%d", i)] = g.value(ap.Structural, depth+1)
			}
		}
		if n.XPreserveUnknownFields && g.rng.IntN(2) == 0 {
			m["extra"] = map[string]interface{}{"x": []interface{}{int64(1), "y", nil}}
		}
		if g.spoil && g.rng.IntN(20) == 0 {
			m["unknownField"] = strings.Repeat("u", 3)
		}
		return m
	}
	return nil
}
