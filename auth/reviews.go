package auth

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// ReviewSubjectAccess answers a SubjectAccessReview: whether the user its spec names
// may do what it asks, as authz decides. What it asks is kube's to validate before
// (package kubesemantics).
func ReviewSubjectAccess(ctx context.Context, authz authorizer.Authorizer, sar *authorizationv1.SubjectAccessReview) {
	sar.Status = decideAccess(ctx, authz, subject(sar.Spec), sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
}

// ReviewLocalSubjectAccess answers a LocalSubjectAccessReview: a SubjectAccessReview
// of resources in its namespace only (which kube's validation checks).
func ReviewLocalSubjectAccess(ctx context.Context, authz authorizer.Authorizer, lsar *authorizationv1.LocalSubjectAccessReview) {
	lsar.Status = decideAccess(ctx, authz, subject(lsar.Spec), lsar.Spec.ResourceAttributes, nil)
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
func ReviewSelfSubjectAccess(ctx context.Context, authz authorizer.Authorizer, u User, ssar *authorizationv1.SelfSubjectAccessReview) {
	ssar.Status = decideAccess(ctx, authz, u, ssar.Spec.ResourceAttributes, ssar.Spec.NonResourceAttributes)
}

// ReviewSelfSubjectRules answers a SelfSubjectRulesReview: what u, the caller, may do
// in its spec's namespace, as rules lists it. As kube-apiserver, it answers a new
// review that holds the rules alone, and a request without a namespace 400.
func ReviewSelfSubjectRules(ctx context.Context, rules authorizer.RuleResolver, u User, ssrr *authorizationv1.SelfSubjectRulesReview) error {
	if ssrr.Spec.Namespace == "" {
		return apierrors.NewBadRequest("no namespace on request")
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
	*ssrr = authorizationv1.SelfSubjectRulesReview{Status: status}
	return nil
}

// ReviewSelf answers a SelfSubjectReview: who u, the caller, is (kubectl auth whoami),
// in a new review created now, as kube-apiserver answers.
func ReviewSelf(u User, ssr *authenticationv1.SelfSubjectReview) {
	*ssr = authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(u)},
	}
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
		return apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	u, audiences, err := authn.AuthenticateToken(ctx, tr.Spec.Token, tr.Spec.Audiences)
	if err != nil {
		tr.Status = authenticationv1.TokenReviewStatus{Error: err.Error()}
		return nil
	}
	tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: userInfo(u), Audiences: audiences}
	return nil
}
