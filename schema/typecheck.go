package schema

import (
	"reflect"
	"slices"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
)

// Most schemas constrain values by type alone (every schema of the API catalog does:
// types and a few formats), and most objects written satisfy them. For those, value
// validation is a walk that checks types, done without kube-openapi's validators; only
// an object the walk cannot vouch for is handed to kube-openapi, which then finds and
// words the errors. The walk is never more lenient than kube-openapi: whatever it
// accepts, kube-openapi accepts (a property test checks it); it may refer objects to
// kube-openapi that turn out valid.

// typesOnly reports whether n and every node below it constrain values by type, by
// nullability, by the formats typeValid knows and by enums of strings only.
func typesOnly(n *structuralschema.Structural) bool {
	if n == nil {
		return true
	}
	if v := n.ValueValidation; v != nil {
		if !reflect.DeepEqual(*v, structuralschema.ValueValidation{Format: v.Format, Enum: v.Enum}) || !knownFormat(n.Type, v.Format) ||
			!stringEnum(n.Type, v.Enum) {
			return false
		}
	}
	for k := range n.Properties {
		p := n.Properties[k]
		if !typesOnly(&p) {
			return false
		}
	}
	if n.AdditionalProperties != nil && n.AdditionalProperties.Structural != nil && !typesOnly(n.AdditionalProperties.Structural) {
		return false
	}
	return typesOnly(n.Items)
}

// stringEnum reports whether enum is empty, or a string schema's enum of strings
// (which typeValid checks as kube-openapi does: the value is one of them).
func stringEnum(t string, enum []structuralschema.JSON) bool {
	if len(enum) == 0 {
		return true
	}
	if t != "string" {
		return false
	}
	for _, e := range enum {
		if _, ok := e.Object.(string); !ok {
			return false
		}
	}
	return true
}

// knownFormat reports whether typeValid checks format f of type t as kube-openapi does.
func knownFormat(t, f string) bool {
	switch t {
	case "string":
		return f == "" || f == "byte" || f == "date-time"
	case "integer":
		return f == "" || f == "int32" || f == "int64"
	case "number":
		return f == "" || f == "double" || f == "float"
	default:
		return f == ""
	}
}

// typeValid reports whether v certainly satisfies n, a typesOnly schema. False means
// "not certain": kube-openapi decides.
func typeValid(n *structuralschema.Structural, v interface{}) bool {
	if v == nil {
		return n.Nullable
	}
	if n.XIntOrString {
		switch v.(type) {
		case string, int64:
			return true
		}
		return false
	}
	switch n.Type {
	case "":
		return n.XPreserveUnknownFields && n.Properties == nil && n.AdditionalProperties == nil && n.Items == nil
	case "string":
		s, ok := v.(string)
		if !ok {
			return false
		}
		vv := n.ValueValidation
		if vv != nil && len(vv.Enum) > 0 && !slices.ContainsFunc(vv.Enum, func(e structuralschema.JSON) bool { return e.Object == s }) {
			return false
		}
		if vv != nil && vv.Format != "" {
			return strfmt.Default.Validates(vv.Format, s)
		}
		return true
	case "integer":
		i, ok := v.(int64)
		if ok && n.ValueValidation != nil && n.ValueValidation.Format == "int32" {
			return i >= -1<<31 && i < 1<<31
		}
		return ok
	case "number":
		switch v.(type) {
		case int64, float64:
			return true
		}
		return false
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		a, ok := v.([]interface{})
		if !ok {
			return false
		}
		for _, e := range a {
			if n.Items == nil || !typeValid(n.Items, e) {
				return false
			}
		}
		return true
	case "object":
		m, ok := v.(map[string]interface{})
		return ok && membersValid(n, m, false)
	default:
		return false
	}
}

// memberValid reports whether e certainly satisfies what n, an object schema, says of
// its member k.
func memberValid(n *structuralschema.Structural, k string, e interface{}) bool {
	if p, ok := n.Properties[k]; ok {
		return typeValid(&p, e)
	}
	if ap := n.AdditionalProperties; ap != nil && ap.Structural != nil {
		return typeValid(ap.Structural, e)
	}
	// An unknown field of a closed object: pruning removes them before validation, so
	// this is unexpected; let kube-openapi judge.
	return n.XPreserveUnknownFields || (n.AdditionalProperties != nil && n.AdditionalProperties.Bool) || len(n.Properties) == 0
}

// objectValid is typeValid for a whole object under its resource's root schema n:
// apiVersion, kind and metadata, which every object carries and a schema may leave
// undeclared, are not unknown fields there (pruning keeps them, and kube-openapi
// accepts members a schema does not declare unless additionalProperties is false,
// which a structural schema cannot say). Declared, they are checked as declared.
func objectValid(n *structuralschema.Structural, obj map[string]interface{}) bool {
	if n.Type != "object" || n.XIntOrString {
		return typeValid(n, obj)
	}
	return membersValid(n, obj, true)
}

// membersValid reports whether every member of m certainly satisfies n, an object
// schema; at an object's root, undeclared apiVersion, kind and metadata pass.
func membersValid(n *structuralschema.Structural, m map[string]interface{}, root bool) bool {
	for k, e := range m {
		if root && (k == "apiVersion" || k == "kind" || k == "metadata") {
			if _, declared := n.Properties[k]; !declared {
				continue
			}
		}
		if !memberValid(n, k, e) {
			return false
		}
	}
	return true
}
