package schema

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// Schema is a compiled structural schema of a whole object (apiVersion, kind, metadata and
// the rest). It is immutable and safe for concurrent use; build one with Compile.
//
// A nil *Schema is valid and stands for "no schema": Default and Prune do nothing,
// Validate and ValidateUpdate accept everything and OpenAPI returns nil.
type Schema struct {
	// structural is the schema the algorithms walk, with defaults pruned. Read-only.
	structural *structuralschema.Structural
	// values validates values against the OpenAPI form of the schema, unsupported formats
	// stripped. Built once: kube-openapi validators are safe for concurrent use.
	values *validate.SchemaValidator
	// ratchet validates updates the same way, ratcheting: an error in a value that the
	// update leaves as it was is not reported (Kubernetes' CRD validation ratcheting).
	ratchet *apiservervalidation.RatchetingSchemaValidator
	// rules evaluates x-kubernetes-validations; nil when the schema has none. The rules
	// are compiled in the StoredExpressions CEL environment, with every library the
	// binary has, whatever the compatibility version: they were accepted when written
	// (package apiextensions compiles new rules at the minimum compatibility version).
	rules *cel.Validator
	// hasEmbedded and hasListSetsOrMaps tell whether any node below the root is an
	// embedded resource or a list of type set or map, so that objects of schemas without
	// them are not walked for nothing.
	hasEmbedded, hasListSetsOrMaps bool
	// hasDefaults tells whether any node has a default, so that reads of objects of
	// schemas without them skip defaulting.
	hasDefaults bool
	// typesOnly tells whether value validation is a type check (see typecheck.go).
	typesOnly bool
}

// openapiV3Types are the values `type` may take in a structural schema.
var openapiV3Types = []string{"array", "boolean", "integer", "number", "object", "string"}

// Compile checks that props, the openAPIV3Schema of a whole object, is a structural schema
// whose Kubernetes extensions are consistent and whose defaults validate, are pruned and
// leave the object's apiVersion, kind and metadata alone, and compiles it. Errors are
// reported with field paths under fldPath (which may be nil), as an *InvalidSchemaError
// matching ErrInvalidSchema.
//
// Compile(ctx, nil, ...) returns (nil, nil): the nil *Schema accepts any object.
// Compile does not modify props, and the returned Schema shares nothing with it.
func Compile(ctx context.Context, props *apiextensionsv1.JSONSchemaProps, fldPath *field.Path) (*Schema, error) {
	if props == nil {
		return nil, nil
	}
	start := time.Now()

	// The conversion shares slices with its input: convert a copy, which then belongs to s.
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props.DeepCopy(), internal, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	errs := checkProps(internal, fldPath, false)
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		// The caller owns the object's TypeMeta and ObjectMeta: the schema may not default them.
		if prop, ok := internal.Properties[k]; ok {
			errs = append(errs, forbidDefaults(&prop, fldPath.Child("properties").Key(k), "in top-level "+k)...)
		}
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		// NewStructural refuses unsupported constructs without saying where; checkProps says.
		if len(errs) > 0 {
			return nil, invalid(errs)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}

	if errs = append(errs, structuralschema.ValidateStructural(fldPath, ss)...); len(errs) > 0 {
		return nil, invalid(errs)
	}
	defaultErrs, err := defaulting.ValidateDefaults(ctx, fldPath, ss, true, true)
	if err != nil {
		return nil, fmt.Errorf("%w: checking defaults: %w", ErrInvalidSchema, err)
	}
	if len(defaultErrs) > 0 {
		return nil, invalid(defaultErrs)
	}
	if err := defaulting.PruneDefaults(ss); err != nil {
		return nil, fmt.Errorf("%w: pruning defaults: %w", ErrInvalidSchema, err)
	}

	// Value validation uses the OpenAPI form kube validates custom resources with: int-or-string
	// typed as [integer, string], and formats this Kubernetes version does not know dropped.
	valueSchema := &spec.Schema{}
	stripFormats := apiservervalidation.StripUnsupportedFormatsPostProcessorForVersion(environment.DefaultCompatibilityVersion())
	if err := apiservervalidation.ConvertJSONSchemaPropsWithPostProcess(internal, valueSchema, stripFormats); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}

	s := &Schema{
		structural: ss,
		values:     validate.NewSchemaValidator(valueSchema, nil, "", strfmt.Default),
		ratchet:    apiservervalidation.NewRatchetingSchemaValidator(valueSchema, nil, "", strfmt.Default),
		rules:      cel.NewValidator(ss, true, celconfig.PerCallLimit),
		typesOnly:  typesOnly(ss),
	}
	walkStructural(ss, func(n *structuralschema.Structural) {
		if n != ss && n.XEmbeddedResource {
			s.hasEmbedded = true
		}
		if n.XListType != nil && (*n.XListType == "set" || *n.XListType == "map") {
			s.hasListSetsOrMaps = true
		}
		if n.Default.Object != nil {
			s.hasDefaults = true
		}
	})
	klog.FromContext(ctx).V(4).Info("Compiled schema", "path", fldPath.String(), "celRules", s.rules != nil, "duration", time.Since(start))
	return s, nil
}

func invalid(errs field.ErrorList) error {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return &InvalidSchemaError{Errors: errs}
}

// checkProps reports what the structural algorithms cannot work with: OpenAPI constructs
// structural schemas do not support, and (outside of allOf/anyOf/oneOf/not, where
// ValidateStructural forbids extensions anyway) inconsistent list and map types and
// objects with both properties and additionalProperties.
func checkProps(p *apiextensions.JSONSchemaProps, pth *field.Path, nested bool) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList

	switch {
	case p.Type == "null":
		errs = append(errs, field.Forbidden(pth.Child("type"), "type cannot be set to null, use nullable as an alternative"))
	case p.Type != "" && !slices.Contains(openapiV3Types, p.Type):
		errs = append(errs, field.NotSupported(pth.Child("type"), p.Type, openapiV3Types))
	}
	for _, u := range []struct {
		name string
		set  bool
	}{
		{"id", p.ID != ""},
		{"$schema", p.Schema != ""},
		{"$ref", p.Ref != nil},
		{"additionalItems", p.AdditionalItems != nil},
		{"patternProperties", len(p.PatternProperties) > 0},
		{"definitions", len(p.Definitions) > 0},
		{"dependencies", p.Dependencies != nil},
	} {
		if u.set {
			errs = append(errs, field.Forbidden(pth.Child(u.name), u.name+" is not supported"))
		}
	}
	if p.Items != nil && len(p.Items.JSONSchemas) > 0 {
		errs = append(errs, field.Forbidden(pth.Child("items"), "items must be a schema object and not an array"))
	}

	if !nested {
		errs = append(errs, checkExtensions(p, pth)...)
	}

	for _, k := range sortedKeys(p.Properties) {
		prop := p.Properties[k]
		errs = append(errs, checkProps(&prop, pth.Child("properties").Key(k), nested)...)
	}
	if p.AdditionalProperties != nil {
		errs = append(errs, checkProps(p.AdditionalProperties.Schema, pth.Child("additionalProperties"), nested)...)
	}
	if p.Items != nil {
		errs = append(errs, checkProps(p.Items.Schema, pth.Child("items"), nested)...)
	}
	for _, junctor := range []struct {
		name    string
		schemas []apiextensions.JSONSchemaProps
	}{{"allOf", p.AllOf}, {"anyOf", p.AnyOf}, {"oneOf", p.OneOf}} {
		for i := range junctor.schemas {
			errs = append(errs, checkProps(&junctor.schemas[i], pth.Child(junctor.name).Index(i), true)...)
		}
	}
	errs = append(errs, checkProps(p.Not, pth.Child("not"), true)...)
	return errs
}

// checkExtensions checks one node's x-kubernetes-list-type, -list-map-keys and -map-type,
// and that properties (a struct) and additionalProperties (a map) are not mixed.
func checkExtensions(p *apiextensions.JSONSchemaProps, pth *field.Path) field.ErrorList {
	var errs field.ErrorList

	if p.AdditionalProperties != nil && len(p.Properties) > 0 && (!p.AdditionalProperties.Allows || p.AdditionalProperties.Schema != nil) {
		errs = append(errs, field.Forbidden(pth.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
	}

	if p.XMapType != nil {
		errs = append(errs, requireType(p, pth, "object", "x-kubernetes-map-type is specified")...)
		if mt := *p.XMapType; mt != "atomic" && mt != "granular" {
			errs = append(errs, field.NotSupported(pth.Child("x-kubernetes-map-type"), mt, []string{"atomic", "granular"}))
		}
	}

	if p.XListType != nil {
		errs = append(errs, requireType(p, pth, "array", "x-kubernetes-list-type is specified")...)
		if lt := *p.XListType; lt != "atomic" && lt != "set" && lt != "map" {
			errs = append(errs, field.NotSupported(pth.Child("x-kubernetes-list-type"), lt, []string{"atomic", "set", "map"}))
		}
	}
	if len(p.XListMapKeys) > 0 {
		switch {
		case p.XListType == nil:
			errs = append(errs, field.Required(pth.Child("x-kubernetes-list-type"), "must be map if x-kubernetes-list-map-keys is non-empty"))
		case *p.XListType != "map":
			errs = append(errs, field.Invalid(pth.Child("x-kubernetes-list-type"), *p.XListType, "must be map if x-kubernetes-list-map-keys is non-empty"))
		}
	}
	if p.XListType == nil || *p.XListType != "map" {
		return errs
	}

	if len(p.XListMapKeys) == 0 {
		errs = append(errs, field.Required(pth.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
	}
	if p.Items == nil || p.Items.Schema == nil {
		return append(errs, field.Required(pth.Child("items"), "must have a schema if x-kubernetes-list-type is map"))
	}
	items := p.Items.Schema
	if items.Type != "object" {
		return append(errs, field.Invalid(pth.Child("items", "type"), items.Type, "must be object if parent array's x-kubernetes-list-type is map"))
	}
	seen := make(map[string]bool, len(p.XListMapKeys))
	for _, k := range p.XListMapKeys {
		if seen[k] {
			errs = append(errs, field.Invalid(pth.Child("x-kubernetes-list-map-keys"), p.XListMapKeys, "must not contain duplicate entries"))
		}
		seen[k] = true
		key, ok := items.Properties[k]
		if !ok {
			errs = append(errs, field.Invalid(pth.Child("x-kubernetes-list-map-keys"), p.XListMapKeys, "entries must all be names of item properties"))
			continue
		}
		if key.Type == "array" || key.Type == "object" {
			errs = append(errs, field.Invalid(pth.Child("items", "properties").Key(k).Child("type"), key.Type, "must be a scalar type if parent array's x-kubernetes-list-type is map"))
		}
	}
	return errs
}

// forbidDefaults reports every default in p and below it.
func forbidDefaults(p *apiextensions.JSONSchemaProps, pth *field.Path, where string) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	if p.Default != nil {
		errs = append(errs, field.Forbidden(pth.Child("default"), "must not be set "+where))
	}
	for _, k := range sortedKeys(p.Properties) {
		prop := p.Properties[k]
		errs = append(errs, forbidDefaults(&prop, pth.Child("properties").Key(k), where)...)
	}
	if p.AdditionalProperties != nil {
		errs = append(errs, forbidDefaults(p.AdditionalProperties.Schema, pth.Child("additionalProperties"), where)...)
	}
	if p.Items != nil {
		errs = append(errs, forbidDefaults(p.Items.Schema, pth.Child("items"), where)...)
	}
	return errs
}

func requireType(p *apiextensions.JSONSchemaProps, pth *field.Path, typ, why string) field.ErrorList {
	switch p.Type {
	case typ:
		return nil
	case "":
		return field.ErrorList{field.Required(pth.Child("type"), "must be "+typ+" if "+why)}
	default:
		return field.ErrorList{field.Invalid(pth.Child("type"), p.Type, "must be "+typ+" if "+why)}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// walkStructural calls visit for s and every schema below it on the structural spine
// (properties, items, additionalProperties), where extensions may appear.
func walkStructural(s *structuralschema.Structural, visit func(*structuralschema.Structural)) {
	if s == nil {
		return
	}
	visit(s)
	for k := range s.Properties {
		prop := s.Properties[k]
		walkStructural(&prop, visit)
	}
	walkStructural(s.Items, visit)
	if s.AdditionalProperties != nil {
		walkStructural(s.AdditionalProperties.Structural, visit)
	}
}
