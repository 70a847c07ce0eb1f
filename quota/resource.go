package quota

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/concordproject/concord/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// GroupResource is core/v1 resourcequotas.
var GroupResource = schema.GroupResource{Resource: "resourcequotas"}

// Configure gives res, the resourcequotas resource, Kubernetes' API-server behaviour:
// quantities in canonical form, validation of resource names, quantities and scopes,
// and kubectl's REQUEST and LIMIT columns.
func Configure(res *registry.Resource) error {
	res.Hooks = &registry.Hooks{
		PrepareForCreate: func(_ context.Context, obj *unstructured.Unstructured) { canonicalize(obj.Object) },
		PrepareForUpdate: func(_ context.Context, obj, _ *unstructured.Unstructured) { canonicalize(obj.Object) },
		Validate:         func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList { return validate(obj.Object) },
		ValidateUpdate: func(_ context.Context, obj, _ *unstructured.Unstructured) field.ErrorList {
			return validate(obj.Object)
		},
	}
	if res.HasPrinterColumns(columns) {
		res.Hooks.TableCells = tableCells
	}
	return nil
}

// quantityLists are the fields of a ResourceQuota that hold resource lists.
var quantityLists = [][]string{{"spec", "hard"}, {"status", "hard"}, {"status", "used"}}

// canonicalize writes every quantity as Kubernetes serializes it ("1000m" as "1"),
// as a round trip through the Go type does in kube-apiserver. Values that do not
// parse are left for validation to report.
func canonicalize(obj map[string]interface{}) {
	for _, path := range quantityLists {
		list, ok, _ := unstructured.NestedFieldNoCopy(obj, path...)
		m, isMap := list.(map[string]interface{})
		if !ok || !isMap {
			continue
		}
		for name, v := range m {
			if q, err := resource.ParseQuantity(fmt.Sprint(v)); err == nil {
				m[name] = q.String()
			}
		}
	}
}

// validate checks a ResourceQuota as Kubernetes' core validation does: resource names,
// non-negative (and for counts, whole) quantities, scopes and scope selectors.
func validate(obj map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	for _, path := range quantityLists {
		errs = append(errs, validateList(obj, path)...)
	}
	if len(errs) > 0 {
		return errs
	}
	var rq corev1.ResourceQuota
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &rq); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	return validateScopes(&rq.Spec)
}

// validateList checks the resource list at path.
func validateList(obj map[string]interface{}, path []string) field.ErrorList {
	list, ok, _ := unstructured.NestedFieldNoCopy(obj, path...)
	m, isMap := list.(map[string]interface{})
	if !ok || !isMap {
		return nil
	}
	var errs field.ErrorList
	fld := field.NewPath(path[0], path[1:]...)
	for _, name := range sortedKeys(m) {
		p := fld.Key(name)
		errs = append(errs, validateResourceName(name, p)...)
		q, err := resource.ParseQuantity(fmt.Sprint(m[name]))
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p, m[name], err.Error()))
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		case isIntegerResource(name) && q.MilliValue()%1000 != 0:
			errs = append(errs, field.Invalid(p, q.String(), "must be an integer"))
		}
	}
	return errs
}

// standardResources are the quota resource names Kubernetes accepts without a domain.
var standardResources = []string{
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
	"persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
	"cpu", "memory", "ephemeral-storage", "storage",
	"requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
}

// integerResources are the standard names that count objects.
var integerResources = []string{
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
	"persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
}

func validateResourceName(name string, p *field.Path) field.ErrorList {
	for _, msg := range validation.IsQualifiedName(name) {
		return field.ErrorList{field.Invalid(p, name, msg)}
	}
	if !strings.Contains(name, "/") && !slices.Contains(standardResources, name) &&
		!strings.HasPrefix(name, "requests.hugepages-") && !strings.HasPrefix(name, "hugepages-") {
		return field.ErrorList{field.Invalid(p, name, "must be a standard resource for quota")}
	}
	return nil
}

// isIntegerResource reports whether name counts things: objects, or an extended
// resource (a name with a domain outside kubernetes.io).
func isIntegerResource(name string) bool {
	if slices.Contains(integerResources, name) || strings.HasPrefix(name, "count/") {
		return true
	}
	domain, _, found := strings.Cut(strings.TrimPrefix(name, "requests."), "/")
	return found && domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

var (
	scopes    = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity, corev1.ResourceQuotaScopeVolumeAttributesClass}
	operators = []corev1.ScopeSelectorOperator{corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn, corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist}
)

// validateScopes checks spec.scopes and spec.scopeSelector.
func validateScopes(spec *corev1.ResourceQuotaSpec) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceQuotaScope]bool{}
	for i, s := range spec.Scopes {
		p := field.NewPath("spec", "scopes").Index(i)
		switch {
		case !slices.Contains(scopes, s):
			errs = append(errs, field.NotSupported(p, s, scopeNames()))
		case seen[s]:
			errs = append(errs, field.Duplicate(p, s))
		}
		seen[s] = true
	}
	if spec.ScopeSelector == nil {
		return errs
	}
	for i, req := range spec.ScopeSelector.MatchExpressions {
		p := field.NewPath("spec", "scopeSelector", "matchExpressions").Index(i)
		if !slices.Contains(scopes, req.ScopeName) {
			errs = append(errs, field.NotSupported(p.Child("scopeName"), req.ScopeName, scopeNames()))
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			ops := make([]string, len(operators))
			for j, op := range operators {
				ops[j] = string(op)
			}
			errs = append(errs, field.NotSupported(p.Child("operator"), req.Operator, ops))
		}
	}
	return errs
}

func scopeNames() []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
