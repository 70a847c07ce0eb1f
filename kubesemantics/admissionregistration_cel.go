package kubesemantics

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
)

// kube's validation of admission configurations compiles new CEL expressions in the
// environment of one process-wide version (environment.DefaultCompatibilityVersion:
// the minimum compatibility version of the binary's default), where kube-apiserver
// compiles them at its own minimum compatibility version. Concord runs servers of
// several versions in one process, so the strategies compile every expression again
// at the version of the server whose call is in progress and correct kube's answer:
// a compilation error kube found that the server's environment does not is dropped,
// one kube missed is added. A new expression that compiles only with every library
// the binary has gets a note saying why it is refused (Concord's; kube's message
// stops before it). An expression the stored object already has compiles as a
// stored expression, with every library, as in kube.

// celExpression is one CEL expression of an admission configuration, as kube's
// validation compiles it.
type celExpression struct {
	path     *field.Path
	accessor plugincel.ExpressionAccessor
	decls    plugincel.OptionalVariableDeclarations
	stored   bool
	// variable: a policy's variable, which the expressions after it may use.
	variable bool
}

// celCheck corrects errs, kube's validation of an object with exprs, for the
// server's CEL environment.
func celCheck(errs field.ErrorList, exprs []celExpression) field.ErrorList {
	if len(exprs) == 0 {
		return errs
	}
	v := serverCELVersion()
	comp, err := plugincel.NewCompositedCompiler(celEnvs(v))
	if err != nil {
		return append(errs, field.InternalError(exprs[0].path, err))
	}
	for _, e := range exprs {
		fe := compileIn(comp, e, envType(e.stored))
		found := compileErrorsAt(errs, e.path)
		switch {
		case fe == nil:
			errs = slices.DeleteFunc(errs, func(x *field.Error) bool { return slices.Contains(found, x) })
			continue
		case len(found) == 0:
			errs = append(errs, fe)
			found = field.ErrorList{fe}
		}
		if !e.stored && found[0].Type == field.ErrorTypeInvalid && compileIn(comp, e, environment.StoredExpressions) == nil {
			found[0].Detail += fmt.Sprintf(" (new expressions may only use the CEL libraries and language features of the minimum compatibility version %s)", v)
		}
	}
	return errs
}

// serverCELVersion is the minimum compatibility version of the server whose call is
// in progress (Gates.Do), the version new expressions compile at.
func serverCELVersion() *version.Version {
	if g, ok := processGate.gate().(interface{ MinCompatibilityVersion() *version.Version }); ok && g.MinCompatibilityVersion() != nil {
		return g.MinCompatibilityVersion()
	}
	return environment.DefaultCompatibilityVersion()
}

// celEnvSets are the CEL environments of each version, built once.
var celEnvSets sync.Map

func celEnvs(v *version.Version) *environment.EnvSet {
	key := v.String()
	if envs, ok := celEnvSets.Load(key); ok {
		return envs.(*environment.EnvSet)
	}
	envs, _ := celEnvSets.LoadOrStore(key, environment.MustBaseEnvSet(v))
	return envs.(*environment.EnvSet)
}

func envType(stored bool) environment.Type {
	if stored {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// compileIn compiles e in env and returns its error as kube's validation reports it.
// A variable compiled in the stored environment only to explain an error is not
// kept: its name is already declared.
func compileIn(comp *plugincel.CompositedCompiler, e celExpression, env environment.Type) *field.Error {
	var err *apiservercel.Error
	if e.variable && env == envType(e.stored) {
		err = comp.CompileAndStoreVariable(e.accessor.(*validating.Variable), e.decls, env).Error
	} else {
		err = comp.CompileCELExpression(e.accessor, e.decls, env).Error
	}
	if err == nil {
		return nil
	}
	return celFieldError(e.path, e.accessor.GetExpression(), err)
}

// celFieldError is the field error of a compilation error of expr at p.
func celFieldError(p *field.Path, expr string, err error) *field.Error {
	var celErr *apiservercel.Error
	if errors.As(err, &celErr) {
		switch celErr.Type {
		case apiservercel.ErrorTypeRequired:
			return field.Required(p, celErr.Detail)
		case apiservercel.ErrorTypeInvalid:
			return field.Invalid(p, expr, celErr.Detail)
		case apiservercel.ErrorTypeInternal:
			return field.InternalError(p, celErr)
		}
	}
	return field.InternalError(p, fmt.Errorf("unsupported error type: %w", err))
}

// compileErrorsAt returns the compilation errors at p: the invalid and internal ones
// (a non-empty expression has no other).
func compileErrorsAt(errs field.ErrorList, p *field.Path) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		if e.Field == p.String() && (e.Type == field.ErrorTypeInvalid || e.Type == field.ErrorTypeInternal) {
			out = append(out, e)
		}
	}
	return out
}

// storedSet holds the expressions of the stored object, by the kind of expression
// kube looks them up as.
type storedSet map[string]sets.Set[string]

func (s storedSet) add(kind, expr string) {
	if s[kind] == nil {
		s[kind] = sets.New[string]()
	}
	s[kind].Insert(expr)
}

func (s storedSet) has(kind, expr string) bool { return s[kind].Has(expr) }

// The kinds of expression a storedSet tells apart, as kube's validation does (a
// variable is looked up among validations, a JSON patch among apply configurations).
const (
	celMatchCondition = "matchCondition"
	celValidation     = "validation"
	celMessage        = "message"
	celAudit          = "audit"
	celApply          = "apply"
)

// matchConditionExprs are the expressions of match conditions at p.
func matchConditionExprs(conds []admissionregistration.MatchCondition, params bool, stored storedSet, p *field.Path) []celExpression {
	var out []celExpression
	for i, mc := range conds {
		expr := strings.TrimSpace(mc.Expression)
		if expr == "" {
			continue
		}
		out = append(out, celExpression{path: p.Index(i).Child("expression"), accessor: &matchconditions.MatchCondition{Expression: expr},
			decls: plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, stored: stored.has(celMatchCondition, expr)})
	}
	return out
}

// variableExprs are the expressions of a policy's variables.
func variableExprs(vars []admissionregistration.Variable, params bool, stored storedSet) []celExpression {
	var out []celExpression
	p := field.NewPath("spec", "variables")
	for i, v := range vars {
		if strings.TrimSpace(v.Expression) == "" {
			continue
		}
		out = append(out, celExpression{path: p.Index(i).Child("expression"), accessor: &validating.Variable{Name: v.Name, Expression: v.Expression},
			decls: plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, stored: stored.has(celValidation, v.Expression), variable: true})
	}
	return out
}

// webhookExprs are the expressions of webhooks' match conditions (conds, each
// webhook's); old, those of the stored configuration (nil on create).
func webhookExprs(conds, old [][]admissionregistration.MatchCondition) []celExpression {
	stored := storedSet{}
	for _, cs := range old {
		for _, mc := range cs {
			stored.add(celMatchCondition, mc.Expression)
		}
	}
	var out []celExpression
	for i, cs := range conds {
		out = append(out, matchConditionExprs(cs, false, stored, field.NewPath("webhooks").Index(i).Child("matchConditions"))...)
	}
	return out
}

func validatingWebhookConditions(c *admissionregistration.ValidatingWebhookConfiguration) [][]admissionregistration.MatchCondition {
	if c == nil {
		return nil
	}
	out := make([][]admissionregistration.MatchCondition, 0, len(c.Webhooks))
	for _, w := range c.Webhooks {
		out = append(out, w.MatchConditions)
	}
	return out
}

func mutatingWebhookConditions(c *admissionregistration.MutatingWebhookConfiguration) [][]admissionregistration.MatchCondition {
	if c == nil {
		return nil
	}
	out := make([][]admissionregistration.MatchCondition, 0, len(c.Webhooks))
	for _, w := range c.Webhooks {
		out = append(out, w.MatchConditions)
	}
	return out
}

// validatingPolicyExprs are the expressions of a ValidatingAdmissionPolicy, in the
// order kube compiles them; old is the stored policy (nil on create).
func validatingPolicyExprs(p, old *admissionregistration.ValidatingAdmissionPolicy) []celExpression {
	stored := storedSet{}
	if old != nil {
		for _, mc := range old.Spec.MatchConditions {
			stored.add(celMatchCondition, mc.Expression)
		}
		for _, v := range old.Spec.Validations {
			stored.add(celValidation, v.Expression)
			stored.add(celMessage, v.MessageExpression)
		}
		for _, a := range old.Spec.AuditAnnotations {
			stored.add(celAudit, a.ValueExpression)
		}
	}
	spec, path := &p.Spec, field.NewPath("spec")
	params := spec.ParamKind != nil
	out := matchConditionExprs(spec.MatchConditions, params, stored, path.Child("matchConditions"))
	out = append(out, variableExprs(spec.Variables, params, stored)...)
	for i, v := range spec.Validations {
		vp := path.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) != "" {
			out = append(out, celExpression{path: vp.Child("expression"), accessor: &validating.ValidationCondition{Expression: v.Expression},
				decls: plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, stored: stored.has(celValidation, v.Expression)})
		}
		if strings.TrimSpace(v.MessageExpression) != "" {
			out = append(out, celExpression{path: vp.Child("messageExpression"), accessor: &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
				decls: plugincel.OptionalVariableDeclarations{HasParams: params}, stored: stored.has(celMessage, v.MessageExpression)})
		}
	}
	for i, a := range spec.AuditAnnotations {
		if expr := strings.TrimSpace(a.ValueExpression); expr != "" {
			out = append(out, celExpression{path: path.Child("auditAnnotations").Index(i).Child("valueExpression"),
				accessor: &validating.AuditAnnotationCondition{ValueExpression: expr},
				decls:    plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}, stored: stored.has(celAudit, a.ValueExpression)})
		}
	}
	return out
}

// mutatingPolicyExprs are the expressions of a MutatingAdmissionPolicy, in the order
// kube compiles them; old is the stored policy (nil on create).
func mutatingPolicyExprs(p, old *admissionregistration.MutatingAdmissionPolicy) []celExpression {
	stored := storedSet{}
	if old != nil {
		for _, mc := range old.Spec.MatchConditions {
			stored.add(celMatchCondition, mc.Expression)
		}
		for _, m := range old.Spec.Mutations {
			if m.ApplyConfiguration != nil {
				stored.add(celApply, m.ApplyConfiguration.Expression)
			}
		}
	}
	spec, path := &p.Spec, field.NewPath("spec")
	params := spec.ParamKind != nil
	out := matchConditionExprs(spec.MatchConditions, params, stored, path.Child("matchConditions"))
	out = append(out, variableExprs(spec.Variables, params, stored)...)
	decls := plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true, HasPatchTypes: true}
	for i, m := range spec.Mutations {
		mp := path.Child("mutations").Index(i)
		switch {
		case m.PatchType == admissionregistration.PatchTypeJSONPatch && m.JSONPatch != nil && strings.TrimSpace(m.JSONPatch.Expression) != "":
			out = append(out, celExpression{path: mp.Child("jsonPatch", "expression"), decls: decls,
				accessor: &patch.JSONPatchCondition{Expression: strings.TrimSpace(m.JSONPatch.Expression)}, stored: stored.has(celApply, m.JSONPatch.Expression)})
		case m.PatchType == admissionregistration.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil && strings.TrimSpace(m.ApplyConfiguration.Expression) != "":
			out = append(out, celExpression{path: mp.Child("applyConfiguration", "expression"), decls: decls,
				accessor: &patch.ApplyConfigurationCondition{Expression: strings.TrimSpace(m.ApplyConfiguration.Expression)},
				stored:   stored.has(celApply, m.ApplyConfiguration.Expression)})
		}
	}
	return out
}
