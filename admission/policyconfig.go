package admission

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/client-go/util/jsonpath"
)

// Admission policies and their bindings, validated as Kubernetes validates them, with
// their expressions compiled (see cel.go).

const (
	maxAuditAnnotations         = 20
	maxAuditAnnotationValueExpr = 5 * 1024
)

// policyOptions are what an update keeps of the stored policy.
type policyOptions struct {
	// keepMatchConditions: the match conditions and paramKind are those stored.
	keepMatchConditions bool
	stored              expressionSet
}

// validatingPolicyOptions returns the options of an update of old (nil: a creation).
func validatingPolicyOptions(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) policyOptions {
	if old == nil {
		return policyOptions{stored: expressionSet{}}
	}
	o := storedPolicyOptions(p.Spec.ParamKind, old.Spec.ParamKind, p.Spec.MatchConditions, old.Spec.MatchConditions, old.Spec.Variables)
	for _, v := range old.Spec.Validations {
		o.stored.add(exprValidation, v.Expression)
		o.stored.add(exprMessage, v.MessageExpression)
	}
	for _, a := range old.Spec.AuditAnnotations {
		o.stored.add(exprAuditAnnotation, strings.TrimSpace(a.ValueExpression))
	}
	return o
}

// mutatingPolicyOptions returns the options of an update of old (nil: a creation).
func mutatingPolicyOptions(p, old *admissionregistrationv1.MutatingAdmissionPolicy) policyOptions {
	if old == nil {
		return policyOptions{stored: expressionSet{}}
	}
	o := storedPolicyOptions(p.Spec.ParamKind, old.Spec.ParamKind, p.Spec.MatchConditions, old.Spec.MatchConditions, old.Spec.Variables)
	for _, m := range old.Spec.Mutations {
		if m.ApplyConfiguration != nil {
			o.stored.add(exprApplyConfiguration, strings.TrimSpace(m.ApplyConfiguration.Expression))
		}
		if m.JSONPatch != nil {
			o.stored.add(exprJSONPatch, strings.TrimSpace(m.JSONPatch.Expression))
		}
	}
	return o
}

// storedPolicyOptions are the options both kinds of policy share on an update: the
// match conditions are kept when they and the paramKind are unchanged, and the stored
// match conditions and variables count as stored expressions.
func storedPolicyOptions(paramKind, oldParamKind *admissionregistrationv1.ParamKind, conds, oldConds []admissionregistrationv1.MatchCondition,
	oldVars []admissionregistrationv1.Variable) policyOptions {
	o := policyOptions{stored: expressionSet{},
		keepMatchConditions: equality.Semantic.DeepEqual(paramKind, oldParamKind) && equality.Semantic.DeepEqual(conds, oldConds)}
	for _, mc := range oldConds {
		o.stored.add(exprMatchCondition, strings.TrimSpace(mc.Expression))
	}
	for _, v := range oldVars {
		o.stored.add(exprVariable, v.Expression)
	}
	return o
}

// validatePolicyCommon checks what both kinds of policy have: failurePolicy,
// paramKind, matchConstraints and matchConditions.
func (c celEnvironments) validatePolicyCommon(failure *admissionregistrationv1.FailurePolicyType, paramKind *admissionregistrationv1.ParamKind,
	match *admissionregistrationv1.MatchResources, conds []admissionregistrationv1.MatchCondition, mutating bool, o policyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case failure == nil:
		errs = append(errs, field.Required(p.Child("failurePolicy"), ""))
	case !supported(*failure, failurePolicies):
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *failure, failurePolicies))
	}
	if paramKind != nil {
		errs = append(errs, validateParamKind(*paramKind, p.Child("paramKind"))...)
	}
	if match == nil {
		errs = append(errs, field.Required(p.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(match, mutating, p.Child("matchConstraints"))...)
		// A resource rule gives the expressions their types.
		if len(match.ResourceRules) == 0 {
			errs = append(errs, field.Required(p.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	if !o.keepMatchConditions {
		errs = append(errs, c.validateMatchConditions(conds, paramKind != nil, o.stored, p.Child("matchConditions"))...)
	}
	return errs
}

// validateValidatingPolicy checks a ValidatingAdmissionPolicy's spec and status.
func (c celEnvironments) validateValidatingPolicy(pol *admissionregistrationv1.ValidatingAdmissionPolicy, o policyOptions) field.ErrorList {
	spec, p := &pol.Spec, field.NewPath("spec")
	errs := c.validatePolicyCommon(spec.FailurePolicy, spec.ParamKind, spec.MatchConstraints, spec.MatchConditions, false, o, p)
	comp := c.compiler()
	if len(spec.Variables) > 0 {
		composited, err := c.compositedCompiler()
		if err != nil {
			return append(errs, field.InternalError(p.Child("variables"), err))
		}
		comp = composited
		errs = append(errs, c.validateVariables(composited, spec.Variables, spec.ParamKind != nil, o, p.Child("variables"))...)
	}
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		const msg = "validations or auditAnnotations must contain at least one item"
		return append(errs, field.Required(p.Child("validations"), msg), field.Required(p.Child("auditAnnotations"), msg))
	}
	for i := range spec.Validations {
		errs = append(errs, c.validateValidation(comp, &spec.Validations[i], spec.ParamKind != nil, o, p.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(p.Child("auditAnnotations"), spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i, a := range spec.AuditAnnotations {
		ap := p.Child("auditAnnotations").Index(i)
		errs = append(errs, c.validateAuditAnnotation(comp, pol.Name, a, spec.ParamKind != nil, o, ap)...)
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return append(errs, validatePolicyStatus(&pol.Status, field.NewPath("status"))...)
}

// validateVariables compiles a policy's variables, in order: each may use those before.
func (c celEnvironments) validateVariables(comp *plugincel.CompositedCompiler, vars []admissionregistrationv1.Variable, params bool, o policyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	decls := plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}
	for i, v := range vars {
		vp := p.Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(vp.Child("name"), "name is not specified"))
		} else if !isCELIdentifier(v.Name) {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "must be a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
			continue
		}
		accessor := &validating.Variable{Name: v.Name, Expression: v.Expression}
		env := o.stored.envType(exprVariable, v.Expression)
		if result := comp.CompileAndStoreVariable(accessor, decls, env); result.Error != nil {
			errs = append(errs, c.explain(comp, accessor, decls, env, compileError(vp.Child("expression"), v.Expression, result.Error)))
		}
	}
	return errs
}

// validateValidation checks one validation: its expression, message, message
// expression and reason.
func (c celEnvironments) validateValidation(comp plugincel.Compiler, v *admissionregistrationv1.Validation, params bool, o policyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if expr := strings.TrimSpace(v.Expression); expr == "" {
		errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, c.check(comp, &validating.ValidationCondition{Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true},
			o.stored.envType(exprValidation, v.Expression), p.Child("expression"))...)
	}
	switch msgExpr := strings.TrimSpace(v.MessageExpression); {
	case v.MessageExpression != "" && msgExpr == "":
		errs = append(errs, field.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	case msgExpr != "":
		errs = append(errs, c.check(comp, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
			plugincel.OptionalVariableDeclarations{HasParams: params},
			o.stored.envType(exprMessage, v.MessageExpression), p.Child("messageExpression"))...)
	}
	msg := strings.TrimSpace(v.Message)
	switch {
	case v.Message != "" && msg == "":
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must be non-empty if specified"))
	case strings.ContainsAny(msg, "\n\r"):
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil && !supported(*v.Reason, validationReasons) {
		errs = append(errs, field.NotSupported(p.Child("reason"), *v.Reason, validationReasons))
	}
	return errs
}

// validateAuditAnnotation checks one audit annotation: its key (qualified once
// prefixed by the policy's name) and value expression.
func (c celEnvironments) validateAuditAnnotation(comp plugincel.Compiler, policy string, a admissionregistrationv1.AuditAnnotation, params bool, o policyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy != "" {
		errs = append(errs, validateQualifiedName(policy+"/"+a.Key, p.Child("key"))...)
	} else {
		errs = append(errs, field.Invalid(p.Child("key"), a.Key, "requires metadata.name be non-empty"))
	}
	expr := strings.TrimSpace(a.ValueExpression)
	switch {
	case expr == "":
		errs = append(errs, field.Required(p.Child("valueExpression"), "valueExpression is not specified"))
	case len(expr) > maxAuditAnnotationValueExpr:
		errs = append(errs, field.Required(p.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpr)))
	default:
		accessor := &validating.AuditAnnotationCondition{ValueExpression: expr}
		decls := plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}
		env := o.stored.envType(exprAuditAnnotation, expr)
		if result := comp.CompileCELExpression(accessor, decls, env); result.Error != nil {
			fe := compileError(p.Child("valueExpression"), a.ValueExpression, result.Error)
			errs = append(errs, c.explain(comp, accessor, decls, env, fe))
		}
	}
	return errs
}

// validateMutatingPolicy checks a MutatingAdmissionPolicy's spec.
func (c celEnvironments) validateMutatingPolicy(pol *admissionregistrationv1.MutatingAdmissionPolicy, o policyOptions) field.ErrorList {
	spec, p := &pol.Spec, field.NewPath("spec")
	errs := c.validatePolicyCommon(spec.FailurePolicy, spec.ParamKind, spec.MatchConstraints, spec.MatchConditions, true, o, p)
	comp, err := c.compositedCompiler()
	if err != nil {
		return append(errs, field.InternalError(p.Child("variables"), err))
	}
	errs = append(errs, c.validateVariables(comp, spec.Variables, spec.ParamKind != nil, o, p.Child("variables"))...)
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(p.Child("mutations"), "mutations must contain at least one item"))
	}
	for i := range spec.Mutations {
		errs = append(errs, c.validateMutation(comp, &spec.Mutations[i], spec.ParamKind != nil, o, p.Child("mutations").Index(i))...)
	}
	switch {
	case spec.ReinvocationPolicy == "":
		errs = append(errs, field.Required(p.Child("reinvocationPolicy"), ""))
	case !supported(spec.ReinvocationPolicy, reinvocationPolicy):
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), spec.ReinvocationPolicy, reinvocationPolicy))
	}
	return errs
}

// validateMutation checks one mutation: its patch type and the expression of that
// type.
func (c celEnvironments) validateMutation(comp plugincel.Compiler, m *admissionregistrationv1.Mutation, params bool, o policyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var accessor plugincel.ExpressionAccessor
	var kind string
	var ep *field.Path
	switch m.PatchType {
	case "":
		return field.ErrorList{field.Required(p.Child("patchType"), "")}
	case admissionregistrationv1.PatchTypeJSONPatch:
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(p.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
		if m.JSONPatch == nil {
			return append(field.ErrorList{field.Required(p.Child("jsonPatch"), "must be specified when patchType is JSONPatch")}, errs...)
		}
		accessor, kind, ep = &patch.JSONPatchCondition{Expression: strings.TrimSpace(m.JSONPatch.Expression)}, exprJSONPatch, p.Child("jsonPatch", "expression")
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(p.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
		if m.ApplyConfiguration == nil {
			return append(field.ErrorList{field.Required(p.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration")}, errs...)
		}
		accessor, kind, ep = &patch.ApplyConfigurationCondition{Expression: strings.TrimSpace(m.ApplyConfiguration.Expression)}, exprApplyConfiguration, p.Child("applyConfiguration", "expression")
	default:
		return field.ErrorList{field.NotSupported(p.Child("patchType"), m.PatchType, patchTypes)}
	}
	if accessor.GetExpression() == "" {
		return append(errs, field.Required(ep, ""))
	}
	decls := plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true, HasPatchTypes: true}
	return append(errs, c.check(comp, accessor, decls, o.stored.envType(kind, accessor.GetExpression()), ep)...)
}

// validateParamKind checks a policy's paramKind: an apiVersion and a kind.
func validateParamKind(k admissionregistrationv1.ParamKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch group, ver, err := parseGroupVersion(k.APIVersion); {
	case k.APIVersion == "":
		errs = append(errs, field.Required(p.Child("apiVersion"), ""))
	case err != nil:
		errs = append(errs, field.Invalid(p.Child("apiVersion"), k.APIVersion, err.Error()))
	default:
		if group != "" {
			if msgs := utilvalidation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("apiVersion"), group, strings.Join(msgs, ",")))
			}
		}
		if ver == "" {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), k.APIVersion, "version must be specified"))
		} else if msgs := utilvalidation.IsDNS1035Label(ver); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), ver, strings.Join(msgs, ",")))
		}
	}
	if k.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(k.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("kind"), k.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// parseGroupVersion splits "group/version" (or "version").
func parseGroupVersion(gv string) (group, version string, err error) {
	if gv == "" || gv == "/" {
		return "", "", nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return "", gv, nil
	case 1:
		group, version, _ = strings.Cut(gv, "/")
		return group, version, nil
	default:
		return "", "", fmt.Errorf("unexpected GroupVersion string: %v", gv)
	}
}

// validatePolicyStatus checks the status the type-checking controller writes.
func validatePolicyStatus(s *admissionregistrationv1.ValidatingAdmissionPolicyStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if tc := s.TypeChecking; tc != nil {
		for i, w := range tc.ExpressionWarnings {
			wp := p.Child("typeChecking", "expressionWarnings").Index(i)
			if w.Warning == "" {
				errs = append(errs, field.Required(wp.Child("warning"), ""))
			}
			errs = append(errs, validateFieldRef(w.FieldRef, wp.Child("fieldRef"))...)
		}
	}
	return append(errs, metav1validation.ValidateConditions(s.Conditions, p.Child("conditions"))...)
}

func validateFieldRef(ref string, p *field.Path) field.ErrorList {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if err := jsonpath.New("spec").Parse(fmt.Sprintf("{%s}", ref)); err != nil {
		return field.ErrorList{field.Invalid(p, ref, fmt.Sprintf("invalid JSONPath: %v", err))}
	}
	return nil
}

// validateBinding checks a binding of either kind: its policy, paramRef and
// matchResources; a validating binding's actions.
func validateBinding(policyName string, ref *admissionregistrationv1.ParamRef, match *admissionregistrationv1.MatchResources,
	actions []admissionregistrationv1.ValidationAction, mutating bool) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if policyName == "" {
		errs = append(errs, field.Required(p.Child("policyName"), ""))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(policyName, false) {
			errs = append(errs, field.Invalid(p.Child("policyName"), policyName, msg))
		}
	}
	errs = append(errs, validateParamRef(ref, p.Child("paramRef"))...)
	errs = append(errs, validateMatchResources(match, mutating, p.Child("matchResources"))...)
	if !mutating {
		errs = append(errs, validateActions(actions, p.Child("validationActions"))...)
	}
	return errs
}

func validateParamRef(r *admissionregistrationv1.ParamRef, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if r.Name != "" {
		for _, msg := range content.IsPathSegmentName(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
		if r.Selector != nil {
			errs = append(errs, field.Forbidden(p.Child("name"), `name and selector are mutually exclusive`))
		}
	}
	if r.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(r.Selector, strictSelectorCheck, p.Child("selector"))...)
		if r.Name != "" {
			errs = append(errs, field.Forbidden(p.Child("selector"), `name and selector are mutually exclusive`))
		}
	}
	if r.Name == "" && r.Selector == nil {
		errs = append(errs, field.Required(p, `one of name or selector must be specified`))
	}
	switch a := r.ParameterNotFoundAction; {
	case a == nil || *a == "":
		errs = append(errs, field.Required(p.Child("parameterNotFoundAction"), ""))
	case !supported(*a, notFoundActions):
		errs = append(errs, field.NotSupported(p.Child("parameterNotFoundAction"), *a, notFoundActions))
	}
	return errs
}

func validateActions(actions []admissionregistrationv1.ValidationAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[admissionregistrationv1.ValidationAction]()
	for i, a := range actions {
		if !supported(a, validationActions) {
			errs = append(errs, field.NotSupported(p.Index(i), a, validationActions))
		}
		if seen.Has(a) {
			errs = append(errs, field.Duplicate(p.Index(i), a))
		}
		seen.Insert(a)
	}
	if seen.Has(admissionregistrationv1.Deny) && seen.Has(admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(p, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(seen) == 0 {
		errs = append(errs, field.Required(p, "at least one validation action is required"))
	}
	return errs
}

var (
	celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	celReserved   = []string{"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
		"if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
)

// isCELIdentifier reports whether name may name a variable in CEL.
func isCELIdentifier(name string) bool {
	return celIdentifier.MatchString(name) && !slices.Contains(celReserved, name)
}
