package schema

import (
	"context"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// Validate checks obj, a defaulted and pruned object being created, against the schema and
// returns kube-apiserver's errors with its field paths, e.g.
// `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`.
//
// It checks, in this order: value validation (types, int-or-string, formats, enums,
// bounds, patterns, required fields, ...); the apiVersion, kind and ObjectMeta of embedded
// resources; the uniqueness of x-kubernetes-list-type set elements and map keys
// (`Duplicate value`); and the x-kubernetes-validations rules, unless an earlier error
// makes the object unfit for them. The object's own metadata is checked only as far as
// the schema says: names, namespaces and the rest of ObjectMeta are the caller's.
func (s *Schema) Validate(ctx context.Context, obj map[string]interface{}) field.ErrorList {
	if s == nil {
		return nil
	}
	errs := s.validateValues(ctx, obj)
	if s.hasListSetsOrMaps {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	}
	return s.validateRules(ctx, obj, nil, errs)
}

// ValidateUpdate is Validate for an update of old (the stored object) to obj, with
// Kubernetes' validation ratcheting: an error of value validation or of an
// x-kubernetes-validations rule in a value the update leaves unchanged (and that can be
// correlated with its old self: object fields, map values, items of map-type lists) is
// not reported, so that tightening a schema does not make stored objects
// un-updatable. List-type uniqueness is only enforced if old satisfied it, and
// transition rules (those using oldSelf) are evaluated, never ratcheted.
func (s *Schema) ValidateUpdate(ctx context.Context, obj, old map[string]interface{}) field.ErrorList {
	if s == nil {
		return nil
	}
	correlation := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: s.structural})
	var errs field.ErrorList
	if !s.typesOnly || !objectValid(s.structural, obj) {
		errs = apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, s.ratchet, apiservervalidation.WithRatcheting(correlation))
	}
	if s.hasEmbedded {
		errs = append(errs, objectmeta.Validate(ctx, nil, obj, s.structural, false)...)
	}
	if s.hasListSetsOrMaps && len(listtype.ValidateListSetsAndMaps(nil, s.structural, old)) == 0 {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	}
	return s.validateRules(ctx, obj, old, errs, cel.WithRatcheting(correlation))
}

// ValidateUpdateWithoutRatcheting is ValidateUpdate without validation ratcheting, as
// Kubernetes validates custom resources with the CRDValidationRatcheting feature gate
// off: every value and every x-kubernetes-validations rule is checked as on create,
// unchanged or not. Transition rules still see old, and list-type uniqueness is still
// only enforced if old satisfied it.
func (s *Schema) ValidateUpdateWithoutRatcheting(ctx context.Context, obj, old map[string]interface{}) field.ErrorList {
	if s == nil {
		return nil
	}
	errs := s.validateValues(ctx, obj)
	if s.hasListSetsOrMaps && len(listtype.ValidateListSetsAndMaps(nil, s.structural, old)) == 0 {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	}
	return s.validateRules(ctx, obj, old, errs)
}

// validateValues runs the OpenAPI value validation and the embedded-resource checks.
func (s *Schema) validateValues(ctx context.Context, obj map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	if !s.typesOnly || !objectValid(s.structural, obj) {
		errs = apiservervalidation.ValidateCustomResource(nil, obj, valueValidator{s.values})
	}
	if s.hasEmbedded {
		errs = append(errs, objectmeta.Validate(ctx, nil, obj, s.structural, false)...)
	}
	return errs
}

// validateRules appends the errors of the x-kubernetes-validations rules to errs, or the
// notice that they were skipped when errs holds errors that make rule evaluation
// meaningless (missing, mistyped or out-of-range values).
func (s *Schema) validateRules(ctx context.Context, obj, old map[string]interface{}, errs field.ErrorList, opts ...cel.Option) field.ErrorList {
	if s.rules == nil {
		return errs
	}
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		}
	}
	var oldObj interface{}
	if old != nil {
		oldObj = old
	}
	ruleErrs, _ := s.rules.Validate(ctx, nil, s.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return append(errs, ruleErrs...)
}

// valueValidator lets a kube-openapi validator built once serve apiextensions' result to
// field.ErrorList translation, which otherwise builds a new validator on every call.
type valueValidator struct {
	v *validate.SchemaValidator
}

func (v valueValidator) Validate(obj interface{}, _ ...apiservervalidation.ValidationOption) *validate.Result {
	return v.v.Validate(obj)
}
