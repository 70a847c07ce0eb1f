package builtin

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/registry"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrNoAuthorization means an access review was asked of resources configured
// without Options.Authorization, which only tools that serve nothing do.
var ErrNoAuthorization = errors.New("access reviews need the server's authorization")

// ErrNoAuthentication means a TokenReview was asked of resources configured without
// Options.Authentication, which only tools that serve nothing do.
var ErrNoAuthentication = errors.New("token reviews need the server's authentication")

// The reviews: created and answered, never stored.
var (
	subjectAccessReviewsGR      = schema.GroupResource{Group: authorizationv1.GroupName, Resource: "subjectaccessreviews"}
	selfSubjectAccessReviewsGR  = schema.GroupResource{Group: authorizationv1.GroupName, Resource: "selfsubjectaccessreviews"}
	localSubjectAccessReviewsGR = schema.GroupResource{Group: authorizationv1.GroupName, Resource: "localsubjectaccessreviews"}
	selfSubjectRulesReviewsGR   = schema.GroupResource{Group: authorizationv1.GroupName, Resource: "selfsubjectrulesreviews"}
	selfSubjectReviewsGR        = schema.GroupResource{Group: authenticationv1.GroupName, Resource: "selfsubjectreviews"}
	tokenReviewsGR              = schema.GroupResource{Group: authenticationv1.GroupName, Resource: "tokenreviews"}
)

// reviewConfigurers give every review its answer.
func reviewConfigurers(opts Options) map[schema.GroupResource]func(*registry.Resource) error {
	authz := opts.Authorization
	withAuthz := func(review func(ctx context.Context, obj *unstructured.Unstructured, _ bool) (*unstructured.Unstructured, error)) func(*registry.Resource) error {
		return func(r *registry.Resource) error {
			if authz == nil {
				// A tool that serves nothing (upgrade-check) still needs to know
				// these resources are not persisted.
				return setReview(r, func(context.Context, *unstructured.Unstructured, bool) (*unstructured.Unstructured, error) {
					return nil, apierrors.NewInternalError(ErrNoAuthorization)
				})
			}
			return setReview(r, review)
		}
	}
	return map[schema.GroupResource]func(*registry.Resource) error{
		subjectAccessReviewsGR: withAuthz(typedReview(func(ctx context.Context, _ auth.User, sar *authorizationv1.SubjectAccessReview) error {
			auth.ReviewSubjectAccess(ctx, authz, sar)
			return nil
		})),
		localSubjectAccessReviewsGR: withAuthz(typedReview(func(ctx context.Context, _ auth.User, lsar *authorizationv1.LocalSubjectAccessReview) error {
			auth.ReviewLocalSubjectAccess(ctx, authz, lsar)
			return nil
		})),
		selfSubjectAccessReviewsGR: withAuthz(typedReview(func(ctx context.Context, u auth.User, ssar *authorizationv1.SelfSubjectAccessReview) error {
			auth.ReviewSelfSubjectAccess(ctx, authz, u, ssar)
			return nil
		})),
		selfSubjectRulesReviewsGR: withAuthz(typedReview(func(ctx context.Context, u auth.User, ssrr *authorizationv1.SelfSubjectRulesReview) error {
			return auth.ReviewSelfSubjectRules(ctx, authz, u, ssrr)
		})),
		tokenReviewsGR: func(r *registry.Resource) error {
			authn := opts.Authentication
			return setReview(r, typedReview(func(ctx context.Context, _ auth.User, tr *authenticationv1.TokenReview) error {
				if authn == nil {
					return apierrors.NewInternalError(ErrNoAuthentication)
				}
				return auth.ReviewToken(ctx, authn, tr)
			}))
		},
		selfSubjectReviewsGR: func(r *registry.Resource) error {
			return setReview(r, typedReview(func(_ context.Context, u auth.User, ssr *authenticationv1.SelfSubjectReview) error {
				auth.ReviewSelf(u, ssr)
				return nil
			}))
		},
	}
}

// setReview makes r a review answered by review. Its status is part of the answer,
// not a subresource.
func setReview(r *registry.Resource, review func(ctx context.Context, obj *unstructured.Unstructured, _ bool) (*unstructured.Unstructured, error)) error {
	for i := range r.Versions {
		r.Versions[i].Subresources = nil
	}
	if r.Hooks == nil {
		r.Hooks = &registry.Hooks{}
	}
	r.Hooks.Review = review
	return nil
}

// typedReview adapts review, which answers a typed review T for the caller, to the
// registry's hook over unstructured objects.
func typedReview[T any](review func(ctx context.Context, u auth.User, obj *T) error) func(ctx context.Context, obj *unstructured.Unstructured, _ bool) (*unstructured.Unstructured, error) {
	return func(ctx context.Context, obj *unstructured.Unstructured, _ bool) (*unstructured.Unstructured, error) {
		u, ok := auth.UserFrom(ctx)
		if !ok {
			return nil, apierrors.NewInternalError(errors.New("no user in the request context"))
		}
		typed := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", obj.GetKind(), err))
		}
		if err := review(ctx, u, typed); err != nil {
			return nil, err
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		answer := &unstructured.Unstructured{Object: m}
		answer.SetAPIVersion(obj.GetAPIVersion())
		answer.SetKind(obj.GetKind())
		return answer, nil
	}
}
