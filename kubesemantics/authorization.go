package kubesemantics

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/authentication"
	"k8s.io/kubernetes/pkg/apis/authorization"
	authorizationvalidation "k8s.io/kubernetes/pkg/apis/authorization/validation"

	_ "k8s.io/kubernetes/pkg/apis/authentication/install" // authentication's types, defaults and conversions
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"  // authorization's types, defaults and conversions
)

func init() { groups = append(groups, reviewKinds) }

// reviewKinds are the strategies of the reviews of groups authorization.k8s.io and
// authentication.k8s.io: kube's validation of what a review asks (its answer is
// package auth's). TokenReviews and SelfSubjectReviews, and SelfSubjectRulesReviews,
// have no validation of their own in kube; a rules review's missing namespace is its
// handler's 400.
func reviewKinds() map[schema.GroupResource]strategy {
	const authz, authn = "authorization.k8s.io", "authentication.k8s.io"
	return map[schema.GroupResource]strategy{
		{Group: authz, Resource: "subjectaccessreviews"}: kind[*authorization.SubjectAccessReview]{review: true,
			validate: func(_ context.Context, r *authorization.SubjectAccessReview) field.ErrorList {
				return authorizationvalidation.ValidateSubjectAccessReview(r)
			},
		}.erase(),
		{Group: authz, Resource: "selfsubjectaccessreviews"}: kind[*authorization.SelfSubjectAccessReview]{review: true,
			validate: func(_ context.Context, r *authorization.SelfSubjectAccessReview) field.ErrorList {
				return authorizationvalidation.ValidateSelfSubjectAccessReview(r)
			},
		}.erase(),
		{Group: authz, Resource: "localsubjectaccessreviews"}: kind[*authorization.LocalSubjectAccessReview]{review: true,
			validate: func(_ context.Context, r *authorization.LocalSubjectAccessReview) field.ErrorList {
				return authorizationvalidation.ValidateLocalSubjectAccessReview(r)
			},
		}.erase(),
		{Group: authz, Resource: "selfsubjectrulesreviews"}: kind[*authorization.SelfSubjectRulesReview]{review: true}.erase(),
		{Group: authn, Resource: "tokenreviews"}:            kind[*authentication.TokenReview]{review: true}.erase(),
		{Group: authn, Resource: "selfsubjectreviews"}:      kind[*authentication.SelfSubjectReview]{review: true}.erase(),
	}
}
