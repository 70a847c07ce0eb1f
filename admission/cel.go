package admission

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The CEL expressions of webhook configurations and admission policies are compiled when
// they are written, in the environments of KEP-4330, as Kubernetes' validation does: an
// expression the stored object already has compiles as a stored expression (every
// library the binary has); a new or changed one as a new expression, with only the
// libraries of the server's minimum compatibility version, so that every release a
// rollback may reach can evaluate it. One that does not compile is refused, 422, with
// the compiler's message under the expression's path.

// celEnvironments are the CEL environments of one minimum compatibility version.
type celEnvironments struct {
	version *version.Version
	envs    *environment.EnvSet
}

// newCELEnvironments returns the environments of compatibility version v (nil: the CEL
// library's default).
func newCELEnvironments(v *version.Version) celEnvironments {
	if v == nil {
		v = environment.DefaultCompatibilityVersion()
	}
	return celEnvironments{version: v, envs: environment.MustBaseEnvSet(v)}
}

// compiler returns a compiler of expressions without variables.
func (c celEnvironments) compiler() plugincel.Compiler { return plugincel.NewCompiler(c.envs) }

// compositedCompiler returns a compiler of expressions that may use variables (a
// policy's); it keeps the variables it compiled.
func (c celEnvironments) compositedCompiler() (*plugincel.CompositedCompiler, error) {
	return plugincel.NewCompositedCompiler(c.envs)
}

// expressionSet holds the expressions an object already has, by kind of expression.
type expressionSet map[string]sets.Set[string]

func (s expressionSet) add(kind, expr string) {
	if s[kind] == nil {
		s[kind] = sets.New[string]()
	}
	s[kind].Insert(expr)
}

// envType is the environment expr of kind compiles in: stored if the object had it.
func (s expressionSet) envType(kind, expr string) environment.Type {
	if s[kind].Has(expr) {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// The kinds of expression an expressionSet tells apart.
const (
	exprMatchCondition     = "matchCondition"
	exprVariable           = "variable"
	exprValidation         = "validation"
	exprMessage            = "messageExpression"
	exprAuditAnnotation    = "auditAnnotation"
	exprApplyConfiguration = "applyConfiguration"
	exprJSONPatch          = "jsonPatch"
)

// compileError turns the compiler's error on expr (at p) into a field error, as
// Kubernetes' validation does.
func compileError(p *field.Path, expr string, err error) *field.Error {
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

// check compiles one expression in env and returns its error, if any, at p. A new
// expression that compiles only with every library the binary has is refused with a
// note saying why (Kubernetes' message stops before it).
func (c celEnvironments) check(comp plugincel.Compiler, accessor plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, env environment.Type, p *field.Path) field.ErrorList {
	result := comp.CompileCELExpression(accessor, decls, env)
	if result.Error == nil {
		return nil
	}
	return field.ErrorList{c.explain(comp, accessor, decls, env, compileError(p, accessor.GetExpression(), result.Error))}
}

// explain adds the note of check to fe, the error of a new expression, if it
// compiles as a stored one.
func (c celEnvironments) explain(comp plugincel.Compiler, accessor plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, env environment.Type, fe *field.Error) *field.Error {
	if env == environment.NewExpressions && fe.Type == field.ErrorTypeInvalid &&
		comp.CompileCELExpression(accessor, decls, environment.StoredExpressions).Error == nil {
		fe.Detail += fmt.Sprintf(" (new expressions may only use the CEL libraries and language features of the minimum compatibility version %s)", c.version)
	}
	return fe
}
