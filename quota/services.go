package quota

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
)

// servicesGR are core Services.
var servicesGR = schema.GroupResource{Resource: "services"}

// serviceResources are what Kubernetes' Service evaluator measures.
var serviceResources = []corev1.ResourceName{
	corev1.ResourceServices, generic.ObjectCountQuotaResourceNameFor(servicesGR),
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

// servicesEvaluator is Kubernetes' quota evaluator of Services: each counts one
// service, a LoadBalancer one load balancer, and a NodePort or LoadBalancer Service one
// node port per port (a LoadBalancer that allocates none, only the ports that name
// one). Its usage is summed over the namespace's Services as list lists them (nil:
// admission's evaluator, which only measures what a request writes).
type servicesEvaluator struct {
	list generic.ListFuncByNamespace
}

var _ quota.Evaluator = servicesEvaluator{}

func (servicesEvaluator) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

func (servicesEvaluator) GroupResource() schema.GroupResource { return servicesGR }

// Handles creations, and updates, which may change a Service's type and ports.
func (servicesEvaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	return op == admission.Create || op == admission.Update
}

func (e servicesEvaluator) Matches(rq *corev1.ResourceQuota, item runtime.Object) (bool, error) {
	return generic.Matches(rq, item, e.MatchingResources, generic.MatchesNoScopeFunc)
}

func (servicesEvaluator) MatchingScopes(runtime.Object, []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return []corev1.ScopedResourceSelectorRequirement{}, nil
}

func (servicesEvaluator) UncoveredQuotaScopes([]corev1.ScopedResourceSelectorRequirement, []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return []corev1.ScopedResourceSelectorRequirement{}, nil
}

func (servicesEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	return quota.Intersection(input, serviceResources)
}

// Usage measures one Service.
func (servicesEvaluator) Usage(item runtime.Object) (corev1.ResourceList, error) {
	svc, err := toService(item)
	if err != nil {
		return nil, err
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{corev1.ResourceServices: one, generic.ObjectCountQuotaResourceNameFor(servicesGR): one}
	ports := int64(len(svc.Spec.Ports))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			ports = 0
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					ports++
				}
			}
		}
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
		out[corev1.ResourceServicesLoadBalancers] = one
	}
	return out, nil
}

func (e servicesEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	if e.list == nil {
		return quota.UsageStats{}, fmt.Errorf("the %s evaluator of admission does not count", servicesGR)
	}
	return generic.CalculateUsageStats(options, e.list, generic.MatchesNoScopeFunc, e.Usage)
}

// toService reads a Service as admission or a list gives it.
func toService(item runtime.Object) (*corev1.Service, error) {
	switch o := item.(type) {
	case *corev1.Service:
		return o, nil
	case *unstructured.Unstructured:
		svc := &corev1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, svc); err != nil {
			return nil, fmt.Errorf("reading a Service for quota: %w", err)
		}
		return svc, nil
	}
	return nil, fmt.Errorf("a %T is not a Service", item)
}
