package kubesemantics

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/apis/policy"
	policyvalidation "k8s.io/kubernetes/pkg/apis/policy/validation"

	_ "k8s.io/kubernetes/pkg/apis/policy/install" // policy's types, defaults and conversions
)

// Evictions (pods/eviction) have no strategy: kube-apiserver validates nothing of an
// Eviction's body but its name (the URL's) and its deleteOptions, in the eviction
// handler itself, and Concord does not serve the subresource.

func init() { groups = append(groups, policyKinds) }

// policyKinds are the strategies of group policy.
func policyKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Group: "policy", Resource: "poddisruptionbudgets"}: pdbKind().erase(),
	}
}

// pdbKind is the strategy of PodDisruptionBudgets.
func pdbKind() kind[*policy.PodDisruptionBudget] {
	return kind[*policy.PodDisruptionBudget]{
		prepareCreate: func(_ context.Context, p *policy.PodDisruptionBudget) {
			p.Status, p.Generation = policy.PodDisruptionBudgetStatus{}, 1
			stripV1beta1Selector(p, nil)
		},
		validate: func(_ context.Context, p *policy.PodDisruptionBudget) field.ErrorList {
			return policyvalidation.ValidatePodDisruptionBudget(p, policyvalidation.PodDisruptionBudgetValidationOptions{})
		},
		prepareUpdate: func(_ context.Context, p, old *policy.PodDisruptionBudget) {
			p.Status = old.Status
			if !apiequality.Semantic.DeepEqual(p.Spec, old.Spec) {
				p.Generation = old.Generation + 1
			}
			stripV1beta1Selector(p, old)
		},
		validateUpdate: func(_ context.Context, p, old *policy.PodDisruptionBudget) field.ErrorList {
			opts := policyvalidation.PodDisruptionBudgetValidationOptions{AllowInvalidLabelValueInSelector: invalidSelector(old)}
			return policyvalidation.ValidatePodDisruptionBudget(p, opts)
		},
		prepareStatus:  func(_ context.Context, p, old *policy.PodDisruptionBudget) { p.Spec = old.Spec },
		validateStatus: validatePDBStatus,
	}
}

// stripV1beta1Selector removes, from a selector a write sets or changes (old nil on
// create), the label policy/v1beta1's conversion adds to say how v1beta1 read an
// empty selector; the two selectors that stand for v1's match-all and match-none
// keep it.
func stripV1beta1Selector(p, old *policy.PodDisruptionBudget) {
	if old != nil && apiequality.Semantic.DeepEqual(old.Spec.Selector, p.Spec.Selector) {
		return
	}
	if apiequality.Semantic.DeepEqual(p.Spec.Selector, policy.NonV1beta1MatchNoneSelector) || apiequality.Semantic.DeepEqual(p.Spec.Selector, policy.NonV1beta1MatchAllSelector) {
		return
	}
	policy.StripPDBV1beta1Label(p.Spec.Selector)
}

// invalidSelector reports whether p's selector is invalid with the rules of label
// values of today: an update keeps such a selector valid.
func invalidSelector(p *policy.PodDisruptionBudget) bool {
	if p.Spec.Selector == nil {
		return false
	}
	return len(metav1validation.ValidateLabelSelector(p.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0
}

// validatePDBStatus checks an update of a budget's status; what it requires of the
// conditions depends on the version of the request.
func validatePDBStatus(ctx context.Context, p, old *policy.PodDisruptionBudget) field.ErrorList {
	var gv schema.GroupVersion
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		gv = schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	}
	return policyvalidation.ValidatePodDisruptionBudgetStatusUpdate(p.Status, old.Status, field.NewPath("status"), gv)
}
