package schema

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// loadProps reads a JSONSchemaProps from testdata.
func loadProps(t testing.TB, name string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return parseProps(t, string(data))
}

func parseProps(t testing.TB, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	props := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.UnmarshalStrict([]byte(y), props); err != nil {
		t.Fatalf("parsing schema: %v", err)
	}
	return props
}

// compileFile compiles a schema from testdata, failing the test on error.
func compileFile(t testing.TB, name string) *Schema {
	t.Helper()
	s, err := Compile(t.Context(), loadProps(t, name), field.NewPath("openAPIV3Schema"))
	if err != nil {
		t.Fatalf("Compile(%s): %v", name, err)
	}
	return s
}

// parseObject decodes YAML into unstructured JSON as the API server holds it: integers
// as int64, other numbers as float64.
func parseObject(t testing.TB, y string) map[string]interface{} {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("parsing object: %v", err)
	}
	obj := map[string]interface{}{}
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatalf("parsing object: %v", err)
	}
	return obj
}

func errorStrings(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// assertJSONEqual compares two JSON values by their canonical encoding.
func assertJSONEqual(t testing.TB, got, want interface{}) {
	t.Helper()
	g, err := utiljson.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := utiljson.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("object:\n got %s\nwant %s", g, w)
	}
}
