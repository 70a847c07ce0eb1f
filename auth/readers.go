package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// readVerbs are the verbs ModeAuthenticatedRead allows authenticated users on
// resources.
var readVerbs = []string{"get", "list", "watch"}

// selfReviews are the reviews a user asks about themselves; ModeAuthenticatedRead lets
// every authenticated user create them, as Kubernetes' system:basic-user role does.
var selfReviews = []schema.GroupResource{
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
}

// secrets are never readable under ModeAuthenticatedRead.
var secrets = schema.GroupResource{Resource: "secrets"}

// debugPath is where the server's profiles are served (--profiling).
const debugPath = "/debug"

// errSecretsNotInRules: the rules ModeAuthenticatedRead lists cannot say that Secrets
// are the exception.
var errSecretsNotInRules = errors.New("AuthenticatedRead: secrets are not readable, which these rules cannot express")

// authenticatedRead is ModeAuthenticatedRead. It allows or has no opinion; it never
// denies, so that a later mode may still allow.
type authenticatedRead struct{}

var _ RuleAuthorizer = authenticatedRead{}

func (authenticatedRead) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	gr := schema.GroupResource{Group: a.GetAPIGroup(), Resource: a.GetResource()}
	verb := a.GetVerb()
	switch {
	case !a.IsResourceRequest() && (a.GetPath() == debugPath || strings.HasPrefix(a.GetPath(), debugPath+"/")):
		return authorizer.DecisionNoOpinion, fmt.Sprintf("only members of group %q may read the server's profiles", GroupMasters), nil
	case !a.IsResourceRequest() && (verb == "get" || verb == "head"):
		return authorizer.DecisionAllow, "", nil
	case !a.IsResourceRequest():
		return authorizer.DecisionNoOpinion, fmt.Sprintf("only members of group %q may %s non-resource paths", GroupMasters, verb), nil
	case !isAuthenticated(a.GetUser()):
		return authorizer.DecisionNoOpinion, "anonymous requests may not access API resources", nil
	case verb == "create" && a.GetSubresource() == "" && slices.Contains(selfReviews, gr):
		return authorizer.DecisionAllow, "", nil
	case gr == secrets:
		return authorizer.DecisionNoOpinion, fmt.Sprintf("secrets are reserved to members of group %q", GroupMasters), nil
	case slices.Contains(readVerbs, verb):
		return authorizer.DecisionAllow, "", nil
	default:
		return authorizer.DecisionNoOpinion, fmt.Sprintf("authenticated users may only get, list and watch; %s is reserved to members of group %q", verb, GroupMasters), nil
	}
}

func (r authenticatedRead) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(r.Authorize(ctx, a))
}

func (authenticatedRead) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor lists what the mode allows u: reading every resource and the self reviews
// for authenticated users, reading non-resource paths for everyone. The rules cannot
// say that Secrets are not readable, so the list is marked incomplete with an error
// that says so.
func (authenticatedRead) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	nonResource := []authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"get", "head"}, NonResourceURLs: []string{"*"}}}
	if !isAuthenticated(u) {
		return nil, nonResource, false, nil
	}
	resources := []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: readVerbs, APIGroups: []string{"*"}, Resources: []string{"*"}}}
	for _, gr := range selfReviews {
		resources = append(resources, &authorizer.DefaultResourceRuleInfo{Verbs: []string{"create"}, APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}})
	}
	return resources, nonResource, true, errSecretsNotInRules
}

func isAuthenticated(u user.Info) bool {
	return u != nil && slices.Contains(u.GetGroups(), GroupAuthenticated)
}
