package admission

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules that say which requests a webhook or policy matches, validated as
// Kubernetes' admissionregistration validation does (its messages and field paths).

var (
	failurePolicies     = []string{string(admissionregistrationv1.Fail), string(admissionregistrationv1.Ignore)}
	matchPolicies       = []string{string(admissionregistrationv1.Equivalent), string(admissionregistrationv1.Exact)}
	reinvocationPolicy  = []string{string(admissionregistrationv1.IfNeededReinvocationPolicy), string(admissionregistrationv1.NeverReinvocationPolicy)}
	scopes              = []string{string(admissionregistrationv1.AllScopes), string(admissionregistrationv1.ClusterScope), string(admissionregistrationv1.NamespacedScope)}
	operations          = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	mutatingOperations  = []string{"*", "CONNECT", "CREATE", "UPDATE"} // a policy cannot mutate a deletion
	allSideEffects      = []string{"None", "NoneOnDryRun", "Some", "Unknown"}
	noSideEffects       = []string{"None", "NoneOnDryRun"}
	validationActions   = []string{"Audit", "Deny", "Warn"}
	notFoundActions     = []string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}
	patchTypes          = []string{string(admissionregistrationv1.PatchTypeApplyConfiguration), string(admissionregistrationv1.PatchTypeJSONPatch)}
	validationReasons   = []string{"Forbidden", "Invalid", "RequestEntityTooLarge"}
	reviewVersions      = []string{"v1", "v1beta1"} // the AdmissionReview versions Concord sends
	maxMatchConditions  = 64
	strictSelectorCheck = metav1validation.LabelSelectorValidationOptions{}
)

func supported[T ~string](v T, allowed []string) bool { return slices.Contains(allowed, string(v)) }

// validateRuleWithOperations checks one rule of a webhook or policy.
func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !supported(op, operations) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, operations))
		}
	}
	return append(errs, validateRule(&r.Rule, p)...)
}

// validateRule checks the groups, versions, resources and scope of a rule.
func validateRule(r *admissionregistrationv1.Rule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !supported(*r.Scope, scopes) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, scopes))
	}
	return errs
}

// validateResources checks a rule's resources and subresources ("pods", "pods/log",
// "*/scale", "*/*"): wildcards must not overlap what else is listed.
func validateResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	wildSub := sets.New[string]() // x/*
	wildRes := sets.New[string]() // */x
	doubleWild, singleWild, plain := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		doubleWild = doubleWild || rs == "*/*"
		singleWild = singleWild || rs == "*"
		res, sub, hasSub := strings.Cut(rs, "/")
		if !hasSub {
			plain = rs != "*"
			continue
		}
		if wildSub.Has(res) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if wildRes.Has(sub) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			wildSub.Insert(res)
		}
		if res == "*" {
			wildRes.Insert(sub)
		}
	}
	if len(resources) > 1 && doubleWild {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWild && plain {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// validateMatchResources checks a policy's or binding's matchConstraints or
// matchResources; mutating policies may not match deletions.
func validateMatchResources(m *admissionregistrationv1.MatchResources, mutating bool, p *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	switch {
	case m.MatchPolicy == nil:
		errs = append(errs, field.Required(p.Child("matchPolicy"), ""))
	case !supported(*m.MatchPolicy, matchPolicies):
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, matchPolicies))
	}
	if m.NamespaceSelector == nil {
		errs = append(errs, field.Required(p.Child("namespaceSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, strictSelectorCheck, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector == nil {
		errs = append(errs, field.Required(p.Child("objectSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, strictSelectorCheck, p.Child("objectSelector"))...)
	}
	for i := range m.ResourceRules {
		errs = append(errs, validateNamedRule(&m.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(&m.ExcludeResourceRules[i], p.Child("excludeResourceRules").Index(i))...)
	}
	if mutating {
		for _, r := range m.ResourceRules {
			for _, op := range r.Operations {
				if !supported(op, mutatingOperations) {
					errs = append(errs, field.NotSupported(p.Child("resourceRules", "operations"), op, mutatingOperations))
				}
			}
		}
	}
	return errs
}

// validateNamedRule checks a rule with resource names.
func validateNamedRule(r *admissionregistrationv1.NamedRuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, name := range r.ResourceNames {
		for _, msg := range content.IsPathSegmentName(name) {
			errs = append(errs, field.Invalid(p.Child("resourceNames").Index(i), name, msg))
		}
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(p.Child("resourceNames").Index(i), name))
		}
		seen.Insert(name)
	}
	return append(errs, validateRuleWithOperations(&r.RuleWithOperations, p)...)
}

// validateQualifiedName checks a name that may carry a DNS-subdomain prefix
// ("example.com/name").
func validateQualifiedName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}
