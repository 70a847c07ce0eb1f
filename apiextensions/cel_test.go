package apiextensions

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
)

// includesRule uses the lists library's includes, introduced in the CEL environment
// of Kubernetes 1.37.
const includesRule = "[1, 2, 3].includes(self.size)"

// ruleCRD is widgetsCRD with rules on spec (the same in both versions, so that the
// internal form has a single spec.validation), a bounded list of names and an
// unbounded one of tags.
func ruleCRD(rules ...apiextensionsv1.ValidationRule) *apiextensionsv1.CustomResourceDefinition {
	crd := widgetsCRD()
	for i := range crd.Spec.Versions {
		root := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
		spec := root.Properties["spec"]
		spec.XValidations = rules
		spec.Properties["names"] = apiextensionsv1.JSONSchemaProps{
			Type: "array", MaxItems: ptr(int64(10)),
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr(int64(10))}},
		}
		spec.Properties["tags"] = apiextensionsv1.JSONSchemaProps{
			Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}},
		}
		root.Properties["spec"] = spec
	}
	return crd
}

// validateAt validates crd at minimum compatibility version v: a creation if old is
// nil, else an update of old, both as the store runs the hooks.
func validateAt(t *testing.T, v string, crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	t.Helper()
	hooks := Resource(WithCELCompatibilityVersion(version.MustParse(v))).Hooks
	obj := toUnstructured(t, crd)
	if old == nil {
		hooks.PrepareForCreate(t.Context(), obj)
		return hooks.Validate(t.Context(), obj)
	}
	stored := toUnstructured(t, old)
	hooks.PrepareForCreate(t.Context(), stored)
	hooks.PrepareForUpdate(t.Context(), obj, stored)
	return hooks.ValidateUpdate(t.Context(), obj, stored)
}

// wantOneError checks that errs is a single error of type typ at fieldPath whose
// detail has every one of parts.
func wantOneError(t *testing.T, errs field.ErrorList, typ field.ErrorType, fieldPath string, parts ...string) {
	t.Helper()
	if len(errs) != 1 || errs[0].Type != typ || errs[0].Field != fieldPath {
		t.Fatalf("errors %v, want one %s at %s", errs, typ, fieldPath)
	}
	for _, p := range parts {
		if !strings.Contains(errs[0].Detail, p) {
			t.Errorf("detail %q does not say %q", errs[0].Detail, p)
		}
	}
}

func TestNewRulesCompileAtTheMinimumCompatibilityVersion(t *testing.T) {
	const rulePath = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"
	tooNew := "new expressions may only use the CEL libraries and language features of the minimum compatibility version 1.36"

	// A library newer than the minimum compatibility version: refused, whichever way the
	// process-wide default of k8s.io/apiserver goes.
	for _, v := range []string{"1.34", "1.36"} {
		errs := validateAt(t, v, ruleCRD(apiextensionsv1.ValidationRule{Rule: includesRule}), nil)
		wantOneError(t, errs, field.ErrorTypeInvalid, rulePath+".rule", "undeclared reference to 'includes'", "minimum compatibility version "+v)
	}
	errs := validateAt(t, "1.36", ruleCRD(apiextensionsv1.ValidationRule{Rule: "self.size > 0", MessageExpression: "[1].includes(self.size) ? 'one' : 'not one'"}), nil)
	wantOneError(t, errs, field.ErrorTypeInvalid, rulePath+".messageExpression", "undeclared reference to 'includes'", tooNew)

	// At 1.37 it is allowed, above the library's default (1.36).
	if errs := validateAt(t, "1.37", ruleCRD(apiextensionsv1.ValidationRule{Rule: includesRule}), nil); len(errs) != 0 {
		t.Fatalf("at 1.37: %v", errs)
	}
	errs = validateAt(t, "1.37", ruleCRD(apiextensionsv1.ValidationRule{Rule: "self.size > 0", MessageExpression: "[1].includes(self.size) ? 'one' : 'not one'"}), nil)
	if len(errs) != 0 {
		t.Fatalf("message expression at 1.37: %v", errs)
	}

	// A rule that compiles with no library is refused in the compiler's words, without
	// a word about versions.
	errs = validateAt(t, "1.37", ruleCRD(apiextensionsv1.ValidationRule{Rule: "self.nope()"}), nil)
	wantOneError(t, errs, field.ErrorTypeInvalid, rulePath+".rule", "compilation failed")
	if strings.Contains(errs[0].Detail, "compatibility") {
		t.Errorf("detail %q blames the version", errs[0].Detail)
	}
}

func TestStoredRulesKeepEveryLibrary(t *testing.T) {
	stored := ruleCRD(apiextensionsv1.ValidationRule{Rule: includesRule, MessageExpression: "[1].includes(self.size) ? 'one' : 'not one'"})

	// A definition created at 1.37, updated after a rollback to 1.35.
	unrelated := stored.DeepCopy()
	unrelated.Spec.Versions[1].Deprecated = true
	if errs := validateAt(t, "1.35", unrelated, stored); len(errs) != 0 {
		t.Fatalf("unrelated update: %v", errs)
	}
	// A rule keeps its environment by its text, wherever it goes (as in Kubernetes).
	moved := ruleCRD()
	for i := range moved.Spec.Versions {
		moved.Spec.Versions[i].Schema.OpenAPIV3Schema.XValidations = apiextensionsv1.ValidationRules{{Rule: strings.Replace(includesRule, "self", "self.spec", 1)}}
	}
	errs := validateAt(t, "1.35", moved, stored)
	wantOneError(t, errs, field.ErrorTypeInvalid, "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule", "includes", "minimum compatibility version 1.35")

	// A new rule with the library, next to the stored one: refused, the stored one not.
	added := ruleCRD(stored.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].XValidations[0],
		apiextensionsv1.ValidationRule{Rule: "[4].includes(self.size)"})
	errs = validateAt(t, "1.35", added, stored)
	wantOneError(t, errs, field.ErrorTypeInvalid, "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule", "includes")
}

func TestRulesPerVersion(t *testing.T) {
	// Different schemas per version: the paths are spec.versions[i].
	crd := ruleCRD()
	spec := crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.XValidations = apiextensionsv1.ValidationRules{{Rule: includesRule}}
	crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	errs := validateAt(t, "1.36", crd, nil)
	wantOneError(t, errs, field.ErrorTypeInvalid, "spec.versions[1].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule", "includes")
}

// TestRulesOnlyConcordCompiles checks what the library cannot check of a rule it cannot
// compile (minimum compatibility version above the library's default).
func TestRulesOnlyConcordCompiles(t *testing.T) {
	// optionalOldSelf is fine for a rule using oldSelf, which the library cannot see.
	transition := apiextensionsv1.ValidationRule{Rule: "!oldSelf.hasValue() || [oldSelf.value().size].includes(self.size)", OptionalOldSelf: ptr(true)}
	if errs := validateAt(t, "1.37", ruleCRD(transition), nil); len(errs) != 0 {
		t.Fatalf("transition rule: %v", errs)
	}
	// ... and is still refused for one that does not use it.
	errs := validateAt(t, "1.37", ruleCRD(apiextensionsv1.ValidationRule{Rule: includesRule, OptionalOldSelf: ptr(true)}), nil)
	wantOneError(t, errs, field.ErrorTypeInvalid, "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].optionalOldSelf", "oldSelf is not used")

	// oldSelf cannot be used in the items of an atomic list.
	crd := ruleCRD()
	for i := range crd.Spec.Versions {
		names := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"].Properties["names"]
		names.Items.Schema.XValidations = apiextensionsv1.ValidationRules{{Rule: "self == oldSelf || [1, 2].includes(size(self))"}}
	}
	errs = validateAt(t, "1.37", crd, nil)
	wantOneError(t, errs, field.ErrorTypeInvalid, "spec.validation.openAPIV3Schema.properties[spec].properties[names].items.x-kubernetes-validations[0].rule",
		"oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[spec].properties[names]")

	// The estimated cost of every item against every item of an unbounded list.
	// The estimated cost of every item against every item of an unbounded list, which
	// also exceeds the budget of the whole schema.
	errs = validateAt(t, "1.37", ruleCRD(apiextensionsv1.ValidationRule{Rule: "self.tags.all(x, self.tags.all(y, self.tags.includes(x + y)))"}), nil)
	if len(errs) != 2 {
		t.Fatalf("errors %v, want the rule's cost and the total", errs)
	}
	wantOneError(t, errs[:1], field.ErrorTypeForbidden, "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule", "estimated rule cost")
	wantOneError(t, errs[1:], field.ErrorTypeForbidden, "spec.validation.openAPIV3Schema", "estimated rule cost total for entire OpenAPIv3 schema")
}

func TestRulesOfInvalidSchemasAreNotCompiled(t *testing.T) {
	// The library compiles no rule of a node with schema errors: neither does Concord.
	crd := ruleCRD(apiextensionsv1.ValidationRule{Rule: includesRule})
	for i := range crd.Spec.Versions {
		spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		spec.Properties["size"] = apiextensionsv1.JSONSchemaProps{Type: "integer", Pattern: "("}
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	errs := validateAt(t, "1.36", crd, nil)
	wantOneError(t, errs, field.ErrorTypeInvalid, "spec.validation.openAPIV3Schema.properties[spec].properties[size].pattern", "must be a valid regular expression")
}

// TestTotalCostOfRulesOnlyConcordCompiles checks the estimated cost of a whole schema
// whose rules the library could not all compile.
func TestTotalCostOfRulesOnlyConcordCompiles(t *testing.T) {
	// Eleven rules of about 9.6 million each: none is over the budget of a rule, together
	// they are over the budget of a schema (100 million).
	crdWith := func(n int, rule string) *apiextensionsv1.CustomResourceDefinition {
		var rules apiextensionsv1.ValidationRules
		for i := range n {
			rules = append(rules, apiextensionsv1.ValidationRule{Rule: fmt.Sprintf(rule, i)})
		}
		crd := ruleCRD(rules...)
		for i := range crd.Spec.Versions {
			spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
			names := spec.Properties["names"]
			names.MaxItems = ptr(int64(660))
			spec.Properties["names"] = names
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		}
		return crd
	}
	errs := validateAt(t, "1.37", crdWith(11, "self.names.all(x, self.names.all(y, x == y || [%d].includes(size(y))))"), nil)
	wantOneError(t, errs, field.ErrorTypeForbidden, "spec.validation.openAPIV3Schema", "estimated rule cost total for entire OpenAPIv3 schema")

	// Where the library's total is over the budget already, its errors stand alone, and
	// a rule at the root is still Concord's to compile.
	crd := crdWith(20, "self.names.all(x, self.names.all(y, x == y || size(y) != %d))")
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.XValidations = apiextensionsv1.ValidationRules{{Rule: "[1, 2, 3].includes(self.spec.size)"}}
	}
	totals := 0
	for _, e := range validateAt(t, "1.37", crd, nil) {
		switch e.Field {
		case "spec.validation.openAPIV3Schema":
			totals++
		case "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule":
			t.Errorf("the rule at the root: %v", e)
		}
	}
	if totals != 1 {
		t.Errorf("%d errors about the total, want the library's one", totals)
	}
}
