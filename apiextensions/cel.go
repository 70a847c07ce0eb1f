package apiextensions

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	celgo "github.com/google/cel-go/cel"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apiextensionscel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The x-kubernetes-validations rules of a definition being written compile in the CEL
// environments of KEP-4330. A rule (or message expression) the stored definition
// already has compiles in the StoredExpressions environment: every library the binary
// has, since some server accepted it. A new or changed one compiles in the
// NewExpressions environment of the server's minimum compatibility version: only the
// libraries every release a rollback may reach can evaluate.
//
// k8s.io/apiextensions-apiserver's CRD validation makes the same choice, but at the
// process-wide compatibility version of k8s.io/apiserver, which Concord leaves at the
// library's default: the servers of one process may run at different versions. So
// Concord compiles the rules itself and puts its verdicts in place of the library's.
// Where the library could not compile a rule that Concord's environment can (a minimum
// compatibility version above the library's default), it also makes the library's
// per-rule checks that need a compiled rule: oldSelf correlation and estimated cost.

// celRules compiles the rules of definitions in the environments of one minimum
// compatibility version.
type celRules struct {
	version *version.Version
	envs    *environment.EnvSet
}

// newCELRules returns the rules compiler of compatibility version v; nil means the CEL
// library's default.
func newCELRules(v *version.Version) celRules {
	if v == nil {
		v = environment.DefaultCompatibilityVersion()
	}
	return celRules{version: v, envs: environment.MustBaseEnvSet(v)}
}

// ruleVerdict is Concord's compilation of one rule.
type ruleVerdict struct {
	// root is the path of the openAPIV3Schema the rule is in; path the rule's own:
	// <schema node>.x-kubernetes-validations[i].
	root, path *field.Path
	rule       apiextensions.ValidationRule
	result     apiextensionscel.CompilationResult
	// ruleTooNew and messageTooNew tell that the rule or its message expression, new,
	// does not compile at the compatibility version but does with every library.
	ruleTooNew, messageTooNew bool
	// cardinality bounds how often the rule's node occurs in an object (nil: unbounded).
	cardinality *uint64
	// uncorrelatable is the first ancestor below which oldSelf has no value, or nil.
	uncorrelatable *field.Path
}

// check returns errs, the library's validation errors of crd (whose stored form is
// old, nil on create), with the CEL compiler's verdicts on crd's rules replaced by
// Concord's.
func (c celRules) check(crd, old *apiextensions.CustomResourceDefinition, errs field.ErrorList) field.ErrorList {
	rc := &ruleCompiler{envs: c.envs, stored: storedExpressionsOf(old), libErrs: errs}
	if v := crd.Spec.Validation; v != nil && v.OpenAPIV3Schema != nil {
		rc.root(v.OpenAPIV3Schema, field.NewPath("spec", "validation", "openAPIV3Schema"))
	}
	for i, v := range crd.Spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			rc.root(v.Schema.OpenAPIV3Schema, field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema"))
		}
	}
	if len(rc.verdicts) == 0 {
		return errs
	}
	return c.merge(errs, rc.verdicts)
}

// merge drops the library's compiler verdicts on the rules Concord compiled, and the
// library's optionalOldSelf complaint about a rule it could not compile but that uses
// oldSelf, and adds Concord's errors.
func (c celRules) merge(errs field.ErrorList, verdicts []ruleVerdict) field.ErrorList {
	byRule := make(map[string]*ruleVerdict, len(verdicts))
	for i := range verdicts {
		byRule[verdicts[i].path.String()] = &verdicts[i]
	}
	// libFailed holds the .rule and .messageExpression paths the library could not
	// compile.
	libFailed := sets.New[string]()
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		if rule, ok := compilerVerdictOn(e); ok && byRule[rule] != nil {
			libFailed.Insert(e.Field)
			continue
		}
		out = append(out, e)
	}
	out = slices.DeleteFunc(out, func(e *field.Error) bool {
		rule, found := strings.CutSuffix(e.Field, ".optionalOldSelf")
		v := byRule[rule]
		return found && v != nil && libFailed.Has(rule+".rule") && v.result.UsesOldSelf
	})
	for i := range verdicts {
		v := &verdicts[i]
		out = append(out, c.errors(v, libFailed.Has(v.path.Child("rule").String()), libFailed.Has(v.path.Child("messageExpression").String()))...)
	}
	return append(out, totalCostErrors(out, verdicts, libFailed)...)
}

// totalCostErrors checks the estimated cost of all the rules of each schema that has
// expressions the library could not compile, which it left out of its total.
func totalCostErrors(errs field.ErrorList, verdicts []ruleVerdict, libFailed sets.Set[string]) field.ErrorList {
	totals := map[string]uint64{}
	var incomplete []*field.Path // the schemas whose total the library got wrong, in order
	for i := range verdicts {
		v := &verdicts[i]
		rule, message := v.costs()
		root := v.root.String()
		totals[root] = addCapped(addCapped(totals[root], rule), message)
		gap := libFailed.Has(v.path.Child("rule").String()) || libFailed.Has(v.path.Child("messageExpression").String())
		if gap && !slices.ContainsFunc(incomplete, func(p *field.Path) bool { return p.String() == root }) {
			incomplete = append(incomplete, v.root)
		}
	}
	var out field.ErrorList
	for _, root := range incomplete {
		total := totals[root.String()]
		reported := slices.ContainsFunc(errs, func(e *field.Error) bool {
			return e.Field == root.String() && e.Type == field.ErrorTypeForbidden
		})
		if total > crdvalidation.StaticEstimatedCRDCostLimit && !reported {
			out = append(out, field.Forbidden(root, fmt.Sprintf("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema, %d, exceeds the budget of %d",
				total, crdvalidation.StaticEstimatedCRDCostLimit)))
		}
	}
	return out
}

// compilerVerdictOn reports whether e is the CEL compiler's verdict on a rule or its
// message expression (the library gives these the whole rule as value), and on which
// rule.
func compilerVerdictOn(e *field.Error) (rule string, ok bool) {
	if _, isRule := e.BadValue.(apiextensions.ValidationRule); !isRule || e.Type != field.ErrorTypeInvalid {
		return "", false
	}
	if rule, ok = strings.CutSuffix(e.Field, ".rule"); ok {
		return rule, true
	}
	return strings.CutSuffix(e.Field, ".messageExpression")
}

// errors returns Concord's errors for one rule. ruleGap and messageGap tell that the
// library could not compile the rule or its message expression, and so did not check
// what needs them compiled.
func (c celRules) errors(v *ruleVerdict, ruleGap, messageGap bool) field.ErrorList {
	rulePath, msgPath := v.path.Child("rule"), v.path.Child("messageExpression")
	r := v.result
	if r.Error != nil {
		detail := r.Error.Detail
		if v.ruleTooNew {
			detail += c.tooNew()
		}
		return field.ErrorList{field.Invalid(rulePath, v.rule, detail)}
	}
	var errs field.ErrorList
	if r.MessageExpressionError != nil {
		detail := r.MessageExpressionError.Detail
		if v.messageTooNew {
			detail += c.tooNew()
		}
		errs = append(errs, field.Invalid(msgPath, v.rule, detail))
	}
	ruleCost, messageCost := v.costs()
	if ruleGap && r.UsesOldSelf && v.uncorrelatable != nil {
		errs = append(errs, field.Invalid(rulePath, v.rule.Rule, fmt.Sprintf("oldSelf cannot be used on the uncorrelatable portion of the schema within %v", v.uncorrelatable)))
	}
	if ruleGap && ruleCost > crdvalidation.StaticEstimatedCostLimit {
		errs = append(errs, field.Forbidden(rulePath, costMessage("rule", ruleCost)))
	}
	// The library checks a message expression only once the rule compiled.
	if (ruleGap || messageGap) && messageCost > crdvalidation.StaticEstimatedCostLimit {
		errs = append(errs, field.Forbidden(msgPath, costMessage("messageExpression", messageCost)))
	}
	return errs
}

// costs returns the estimated worst-case costs of the rule, over every occurrence of its
// node in an object, and of one evaluation of its message expression.
func (v *ruleVerdict) costs() (rule, message uint64) {
	cardinality := v.result.MaxCardinality
	if v.cardinality != nil {
		cardinality = *v.cardinality
	}
	if v.result.MessageExpression != nil {
		message = v.result.MessageExpressionMaxCost
	}
	return multiplyCapped(v.result.MaxCost, cardinality), message
}

// tooNew explains a compilation error of a new expression that compiles with every
// library the binary has.
func (c celRules) tooNew() string {
	return fmt.Sprintf(" (new expressions may only use the CEL libraries and language features of the minimum compatibility version %s)", c.version)
}

func costMessage(what string, cost uint64) string {
	return fmt.Sprintf("estimated %s cost %d exceeds the budget of %d (try simplifying the expression, or adding maxItems, maxProperties and maxLength where arrays, maps and strings are declared)",
		what, cost, crdvalidation.StaticEstimatedCostLimit)
}

// addCapped returns a+b, or math.MaxUint64 if that overflows.
func addCapped(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// multiplyCapped returns a*b, or math.MaxUint64 if that overflows.
func multiplyCapped(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// ruleCompiler compiles the rules of a definition's schemas.
type ruleCompiler struct {
	envs   *environment.EnvSet
	stored storedExpressions
	// libErrs are the library's errors: the rules of a node with errors at or below it
	// (other than errors of rules) are not compiled, as the library does not, since
	// their types may not be what the rules expect.
	libErrs  field.ErrorList
	verdicts []ruleVerdict
	// rootPath is the path of the openAPIV3Schema being walked.
	rootPath *field.Path
}

// root compiles the rules of the openAPIV3Schema s at pth.
func (rc *ruleCompiler) root(s *apiextensions.JSONSchemaProps, pth *field.Path) {
	rc.rootPath = pth
	rc.walk(s, crdvalidation.RootCELContext(s), pth, nil)
}

// walk compiles the rules of s and of the nodes below it on the structural spine
// (structural schemas have rules nowhere else). cc is s's CEL context, pth its path and
// uncorrelatable the first ancestor below which oldSelf has no value.
func (rc *ruleCompiler) walk(s *apiextensions.JSONSchemaProps, cc *crdvalidation.CELSchemaContext, pth, uncorrelatable *field.Path) {
	if len(s.XValidations) > 0 && !rc.hasSchemaErrors(pth) {
		rc.node(s, cc, pth, uncorrelatable)
	}
	inProps := uncorrelatable
	if inProps == nil && !apiextensionscel.MapIsCorrelatable(s.XMapType) {
		inProps = pth
	}
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		prop := s.Properties[k]
		rc.walk(&prop, cc.ChildPropertyContext(&prop, k), pth.Child("properties").Key(k), inProps)
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		rc.walk(ap.Schema, cc.ChildAdditionalPropertiesContext(ap.Schema), pth.Child("additionalProperties"), uncorrelatable)
	}
	if s.Items != nil && s.Items.Schema != nil {
		inItems := uncorrelatable
		if inItems == nil && (s.XListType == nil || *s.XListType != "map") {
			inItems = pth
		}
		rc.walk(s.Items.Schema, cc.ChildItemsContext(s.Items.Schema), pth.Child("items"), inItems)
	}
}

// node compiles the rules of one schema node.
func (rc *ruleCompiler) node(s *apiextensions.JSONSchemaProps, cc *crdvalidation.CELSchemaContext, pth, uncorrelatable *field.Path) {
	info, err := cc.TypeInfo()
	if err != nil || info == nil {
		return // the library reports why the node has no CEL types
	}
	results, err := apiextensionscel.Compile(info.Schema, info.DeclType, celconfig.PerCallLimit, rc.envs, rc.stored)
	if err != nil {
		return // likewise
	}
	var everything []apiextensionscel.CompilationResult
	for i, r := range results {
		v := ruleVerdict{
			root: rc.rootPath, path: pth.Child("x-kubernetes-validations").Index(i), rule: s.XValidations[i], result: r,
			cardinality: cc.MaxCardinality, uncorrelatable: uncorrelatable,
		}
		newRule := !rc.stored.rules.Has(v.rule.Rule)
		newMessage := v.rule.MessageExpression != "" && !rc.stored.messages.Has(v.rule.MessageExpression)
		if (r.Error != nil && newRule) || (r.MessageExpressionError != nil && newMessage) {
			if everything == nil {
				// Whether the binary's libraries would do: then the rule is too new.
				everything, _ = apiextensionscel.Compile(info.Schema, info.DeclType, celconfig.PerCallLimit, rc.envs, apiextensionscel.StoredExpressionsEnvLoader())
			}
			if i < len(everything) {
				v.ruleTooNew = r.Error != nil && newRule && everything[i].Error == nil
				v.messageTooNew = r.MessageExpressionError != nil && newMessage && everything[i].MessageExpressionError == nil
			}
		}
		rc.verdicts = append(rc.verdicts, v)
	}
}

// hasSchemaErrors reports whether the library found an error at pth or below it other
// than about a rule or about the estimated cost of all the rules of a schema (the one
// Forbidden error at the root of a schema).
func (rc *ruleCompiler) hasSchemaErrors(pth *field.Path) bool {
	prefix := pth.String()
	for _, e := range rc.libErrs {
		rest, ok := strings.CutPrefix(e.Field, prefix)
		switch {
		case !ok || (rest != "" && rest[0] != '.' && rest[0] != '['):
		case strings.Contains(rest, "x-kubernetes-validations["):
		case e.Field == rc.rootPath.String() && e.Type == field.ErrorTypeForbidden:
		default:
			return true
		}
	}
	return false
}

// storedExpressions are the rules and message expressions of a stored definition,
// wherever they are in it. It is the apiextensionscel.EnvLoader of an update: they
// compile in the StoredExpressions environment, everything else in the NewExpressions
// one.
type storedExpressions struct {
	rules, messages sets.Set[string]
}

var _ apiextensionscel.EnvLoader = storedExpressions{}

func storedExpressionsOf(crd *apiextensions.CustomResourceDefinition) storedExpressions {
	s := storedExpressions{rules: sets.New[string](), messages: sets.New[string]()}
	if crd == nil {
		return s
	}
	collect := func(p *apiextensions.JSONSchemaProps) bool {
		for _, r := range p.XValidations {
			s.rules.Insert(r.Rule)
			if r.MessageExpression != "" {
				s.messages.Insert(r.MessageExpression)
			}
		}
		return false
	}
	if v := crd.Spec.Validation; v != nil {
		crdvalidation.SchemaHas(v.OpenAPIV3Schema, collect)
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil {
			crdvalidation.SchemaHas(v.Schema.OpenAPIV3Schema, collect)
		}
	}
	return s
}

// RuleEnv returns the environment rule compiles in.
func (s storedExpressions) RuleEnv(envs *environment.EnvSet, rule string) *celgo.Env {
	if s.rules.Has(rule) {
		return envs.StoredExpressionsEnv()
	}
	return envs.NewExpressionsEnv()
}

// MessageExpressionEnv returns the environment a message expression compiles in.
func (s storedExpressions) MessageExpressionEnv(envs *environment.EnvSet, expr string) *celgo.Env {
	if s.messages.Has(expr) {
		return envs.StoredExpressionsEnv()
	}
	return envs.NewExpressionsEnv()
}
