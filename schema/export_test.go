package schema

import (
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// What the external tests of the type walk need (typecheck.go).

func (s *Schema) TypesOnly() bool                                 { return s.typesOnly }
func (s *Schema) TypeValid(obj map[string]interface{}) bool       { return objectValid(s.structural, obj) }
func (s *Schema) StructuralForTest() *structuralschema.Structural { return s.structural }
func (s *Schema) OpenAPIErrors(obj map[string]interface{}) field.ErrorList {
	return apiservervalidation.ValidateCustomResource(nil, obj, valueValidator{s.values})
}
