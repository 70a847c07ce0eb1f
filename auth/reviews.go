package auth

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// The reviews' kinds, for their validation errors.
var (
	subjectAccessReviewKind      = authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind()
	selfSubjectAccessReviewKind  = authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind()
	localSubjectAccessReviewKind = authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind()
	selfSubjectRulesReviewKind   = authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview").GroupKind()
)

// ReviewSubjectAccess answers a SubjectAccessReview: whether the user its spec names
// may do what it asks, as authz decides. An invalid spec is a 422 Invalid error.
func ReviewSubjectAccess(ctx context.Context, authz authorizer.Authorizer, sar *authorizationv1.SubjectAccessReview) error {
	if errs := validateSubjectAccessSpec(sar.Spec); len(errs) > 0 {
		return apierrors.NewInvalid(subjectAccessReviewKind, sar.Name, errs)
	}
	sar.Status = decideAccess(ctx, authz, subject(sar.Spec), sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
	return nil
}

// ReviewLocalSubjectAccess answers a LocalSubjectAccessReview made in namespace: a
// SubjectAccessReview of resources in that namespace only.
func ReviewLocalSubjectAccess(ctx context.Context, authz authorizer.Authorizer, namespace string, lsar *authorizationv1.LocalSubjectAccessReview) error {
	errs := validateSubjectAccessSpec(lsar.Spec)
	if ra := lsar.Spec.ResourceAttributes; ra != nil && ra.Namespace != namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if lsar.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), lsar.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(localSubjectAccessReviewKind, lsar.Name, errs)
	}
	lsar.Status = decideAccess(ctx, authz, subject(lsar.Spec), lsar.Spec.ResourceAttributes, nil)
	return nil
}

// validateSubjectAccessSpec checks the spec of a review about another user: what it
// asks, and who (a user, groups, or both).
func validateSubjectAccessSpec(spec authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	errs := validateAccessSpec(spec)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

// subject is the user a review's spec names.
func subject(spec authorizationv1.SubjectAccessReviewSpec) User {
	u := User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// ReviewSelfSubjectAccess answers a SelfSubjectAccessReview: whether u, the caller,
// may do what it asks.
func ReviewSelfSubjectAccess(ctx context.Context, authz authorizer.Authorizer, u User, ssar *authorizationv1.SelfSubjectAccessReview) error {
	spec := authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: ssar.Spec.ResourceAttributes, NonResourceAttributes: ssar.Spec.NonResourceAttributes,
	}
	if errs := validateAccessSpec(spec); len(errs) > 0 {
		return apierrors.NewInvalid(selfSubjectAccessReviewKind, ssar.Name, errs)
	}
	ssar.Status = decideAccess(ctx, authz, u, spec.ResourceAttributes, spec.NonResourceAttributes)
	return nil
}

// ReviewSelfSubjectRules answers a SelfSubjectRulesReview: what u, the caller, may do
// in its spec's namespace, as rules lists it.
func ReviewSelfSubjectRules(ctx context.Context, rules authorizer.RuleResolver, u User, ssrr *authorizationv1.SelfSubjectRulesReview) error {
	if ssrr.Spec.Namespace == "" {
		errs := field.ErrorList{field.Required(field.NewPath("spec", "namespace"), "a namespace is required")}
		return apierrors.NewInvalid(selfSubjectRulesReviewKind, ssrr.Name, errs)
	}
	resourceRules, nonResourceRules, incomplete, err := rules.RulesFor(ctx, u.Info(), ssrr.Spec.Namespace)
	status := authorizationv1.SubjectRulesReviewStatus{Incomplete: incomplete, ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	for _, r := range resourceRules {
		status.ResourceRules = append(status.ResourceRules, authorizationv1.ResourceRule{
			Verbs: r.GetVerbs(), APIGroups: r.GetAPIGroups(), Resources: r.GetResources(), ResourceNames: r.GetResourceNames(),
		})
	}
	for _, r := range nonResourceRules {
		status.NonResourceRules = append(status.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.GetVerbs(), NonResourceURLs: r.GetNonResourceURLs()})
	}
	ssrr.Status = status
	return nil
}

// ReviewSelf answers a SelfSubjectReview: who u, the caller, is (kubectl auth whoami).
func ReviewSelf(u User, ssr *authenticationv1.SelfSubjectReview) {
	ssr.Status.UserInfo = userInfo(u)
}

// userInfo is u as authentication.k8s.io reports users.
func userInfo(u User) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return info
}

// validateAccessSpec checks what every access review asks: resource or non-resource
// attributes, exactly one of them.
func validateAccessSpec(spec authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "resourceAttributes"), spec.ResourceAttributes,
			"exactly one of nonResourceAttributes or resourceAttributes must be specified")}
	}
	return nil
}

// decideAccess asks authz whether u may do what the attributes describe.
func decideAccess(ctx context.Context, authz authorizer.Authorizer, u User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a := Attributes{User: u}
	if ra != nil {
		a.ResourceRequest = true
		a.Verb, a.APIGroup, a.Resource, a.Subresource, a.Namespace, a.Name = ra.Verb, ra.Group, ra.Resource, ra.Subresource, ra.Namespace, ra.Name
	} else {
		a.Verb, a.Path = nra.Verb, nra.Path
	}
	decision, reason, err := authz.Authorize(ctx, a.Record())
	status := authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authorizer.DecisionAllow,
		Denied:  decision == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return status
}

// ReviewToken answers a TokenReview: whether spec.token is valid for spec.audiences
// (none: the server's own) and whose it is. The token itself is never logged.
func ReviewToken(ctx context.Context, authn *Authentication, tr *authenticationv1.TokenReview) error {
	if tr.Spec.Token == "" {
		return apierrors.NewBadRequest("token is required for TokenReview")
	}
	u, audiences, err := authn.AuthenticateToken(ctx, tr.Spec.Token, tr.Spec.Audiences)
	if err != nil {
		tr.Status = authenticationv1.TokenReviewStatus{Error: err.Error()}
		return nil
	}
	tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: userInfo(u), Audiences: audiences}
	return nil
}
