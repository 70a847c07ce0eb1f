package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateName checks the name of a role or binding (or a generateName, prefix true)
// as Kubernetes does: any string that is safe as a URL path segment, so that names
// such as "system:basic-user" are valid.
func ValidateName(name string, _ bool) []string {
	return content.IsPathSegmentName(name)
}

// ValidateRole returns the errors Kubernetes finds in a new Role.
func ValidateRole(role *rbacv1.Role) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&role.ObjectMeta, true, ValidateName, field.NewPath("metadata"))
	return append(errs, roleErrors(role, nil)...)
}

// ValidateRoleUpdate returns the errors Kubernetes finds in an update of old to role.
func ValidateRoleUpdate(role, old *rbacv1.Role) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&role.ObjectMeta, true, ValidateName, field.NewPath("metadata"))
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&role.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return append(errs, roleErrors(role, old)...)
}

// ValidateClusterRole returns the errors Kubernetes finds in a new ClusterRole.
func ValidateClusterRole(role *rbacv1.ClusterRole) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&role.ObjectMeta, false, ValidateName, field.NewPath("metadata"))
	return append(errs, clusterRoleErrors(role, nil)...)
}

// ValidateClusterRoleUpdate returns the errors Kubernetes finds in an update of old to
// role.
func ValidateClusterRoleUpdate(role, old *rbacv1.ClusterRole) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&role.ObjectMeta, false, ValidateName, field.NewPath("metadata"))
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&role.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return append(errs, clusterRoleErrors(role, old)...)
}

// ValidateRoleBinding returns the errors Kubernetes finds in a new RoleBinding.
func ValidateRoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, true, ValidateName, field.NewPath("metadata"))
	return append(errs, bindingErrors(b.RoleRef, b.Subjects, true, nil)...)
}

// ValidateRoleBindingUpdate returns the errors Kubernetes finds in an update of old to
// b, among them a changed roleRef.
func ValidateRoleBindingUpdate(b, old *rbacv1.RoleBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, true, ValidateName, field.NewPath("metadata"))
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return append(errs, bindingErrors(b.RoleRef, b.Subjects, true, &bindingState{old.RoleRef, old.Subjects})...)
}

// ValidateClusterRoleBinding returns the errors Kubernetes finds in a new
// ClusterRoleBinding.
func ValidateClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, false, ValidateName, field.NewPath("metadata"))
	return append(errs, bindingErrors(b.RoleRef, b.Subjects, false, nil)...)
}

// ValidateClusterRoleBindingUpdate returns the errors Kubernetes finds in an update of
// old to b, among them a changed roleRef.
func ValidateClusterRoleBindingUpdate(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, false, ValidateName, field.NewPath("metadata"))
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return append(errs, bindingErrors(b.RoleRef, b.Subjects, false, &bindingState{old.RoleRef, old.Subjects})...)
}

// fieldErrors collects errors in the order Kubernetes 1.37 reports them: those of its
// hand-written validation, then those its declarative validation enforces in their
// place (required verbs, roleRef names and subject names). Declarative validation
// does not look again at a list an update leaves as it was: the hand-written error
// (worded differently for verbs) then stays in its place.
type fieldErrors struct {
	handwritten, declarative field.ErrorList
}

func (f *fieldErrors) add(errs ...*field.Error) { f.handwritten = append(f.handwritten, errs...) }

// required reports the required field p, in place with detail if unchanged is true,
// else as declarative validation does.
func (f *fieldErrors) required(p *field.Path, detail string, unchanged bool) {
	if unchanged {
		f.add(field.Required(p, detail))
		return
	}
	f.declarative = append(f.declarative, field.Required(p, ""))
}

func (f *fieldErrors) list() field.ErrorList {
	return append(f.handwritten, f.declarative...)
}

// roleErrors checks what a Role has besides metadata; old is nil on creation.
func roleErrors(role, old *rbacv1.Role) field.ErrorList {
	var f fieldErrors
	unchanged := old != nil && apiequality.Semantic.DeepEqual(role.Rules, old.Rules)
	validateRules(&f, role.Rules, true, unchanged)
	return f.list()
}

// clusterRoleErrors checks what a ClusterRole has besides metadata; old is nil on
// creation. An update may keep label selectors that new ones could not have.
func clusterRoleErrors(role, old *rbacv1.ClusterRole) field.ErrorList {
	var f fieldErrors
	unchanged := old != nil && apiequality.Semantic.DeepEqual(role.Rules, old.Rules)
	validateRules(&f, role.Rules, false, unchanged)
	if role.AggregationRule != nil {
		opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: old != nil && hasInvalidSelector(old)}
		p := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(role.AggregationRule.ClusterRoleSelectors) == 0 {
			f.add(field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range role.AggregationRule.ClusterRoleSelectors {
			sel := &role.AggregationRule.ClusterRoleSelectors[i]
			f.add(metav1validation.ValidateLabelSelector(sel, opts, p.Index(i))...)
			if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
				f.add(field.Invalid(p.Index(i), nil, "invalid label selector."))
			}
		}
	}
	return f.list()
}

// hasInvalidSelector reports whether role aggregates with a selector that new
// ClusterRoles may not have.
func hasInvalidSelector(role *rbacv1.ClusterRole) bool {
	if role.AggregationRule == nil {
		return false
	}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		if len(metav1validation.ValidateLabelSelector(&role.AggregationRule.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
			return true
		}
	}
	return false
}

// validateRules checks the rules of a Role (namespaced) or ClusterRole. unchanged
// says an update leaves them as they were.
func validateRules(f *fieldErrors, rules []rbacv1.PolicyRule, namespaced, unchanged bool) {
	for i := range rules {
		rule, p := &rules[i], field.NewPath("rules").Index(i)
		if len(rule.Verbs) == 0 {
			f.required(p.Child("verbs"), "verbs must contain at least one value", unchanged)
		}
		if len(rule.NonResourceURLs) > 0 {
			if namespaced {
				f.add(field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
				f.add(field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(rule.APIGroups) == 0 {
			f.add(field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(rule.Resources) == 0 {
			f.add(field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
}

// bindingState is what an update of a binding changes from.
type bindingState struct {
	roleRef  rbacv1.RoleRef
	subjects []rbacv1.Subject
}

// immutableRoleRef is a roleRef as Kubernetes prints it in the error of a change: with
// its Go field names, as its internal type has no JSON names.
type immutableRoleRef struct {
	APIGroup, Kind, Name string
}

// bindingErrors checks what a RoleBinding (namespaced) or ClusterRoleBinding has
// besides metadata; old is nil on creation.
func bindingErrors(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool, old *bindingState) field.ErrorList {
	var f fieldErrors
	p := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		f.add(field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"Role", "ClusterRole"}
	if !namespaced {
		kinds = []string{"ClusterRole"}
	}
	if ref.Kind != "ClusterRole" && (!namespaced || ref.Kind != "Role") {
		f.add(field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		// On an update, declarative validation either finds roleRef unchanged or
		// stops at its immutability: the hand-written error stays.
		f.required(p.Child("name"), "", old != nil)
	} else {
		for _, msg := range ValidateName(ref.Name, false) {
			f.add(field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	unchanged := old != nil && apiequality.Semantic.DeepEqual(subjects, old.subjects)
	for i := range subjects {
		validateSubject(&f, &subjects[i], namespaced, field.NewPath("subjects").Index(i), unchanged)
	}
	if old != nil && ref != old.roleRef {
		f.add(field.Invalid(p, immutableRoleRef(ref), apimachineryvalidation.FieldImmutableErrorMsg).WithOrigin("immutable"))
	}
	return f.list()
}

// validateSubject checks a subject of a RoleBinding (namespaced) or
// ClusterRoleBinding, whose service accounts must then name their namespace.
func validateSubject(f *fieldErrors, s *rbacv1.Subject, namespaced bool, p *field.Path, unchanged bool) {
	if s.Name == "" {
		f.required(p.Child("name"), "", unchanged)
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apimachineryvalidation.ValidateServiceAccountName(s.Name, false) {
				f.add(field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			f.add(field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			f.add(field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			f.add(field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		f.add(field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
}
