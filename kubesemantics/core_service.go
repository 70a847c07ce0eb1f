package kubesemantics

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	serviceapi "k8s.io/kubernetes/pkg/api/service"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// coreServiceKinds is the strategy of Services. What kube-apiserver's Service REST
// storage does around it, the cluster IPs, IP families and node ports it allocates
// and the values an update leaves out that it keeps, is package service's (its hooks
// and its allocation in the store's writes).
func coreServiceKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Resource: "services"}: kind[*core.Service]{
			prepareCreate: func(_ context.Context, s *core.Service) { s.Status = core.ServiceStatus{} },
			validate: func(_ context.Context, s *core.Service) field.ErrorList {
				return corevalidation.ValidateServiceCreate(s)
			},
			warnCreate: func(_ context.Context, s *core.Service) []string { return serviceapi.GetWarningsForService(s, nil) },
			prepareUpdate: func(_ context.Context, s, old *core.Service) {
				s.Status = old.Status
				dropReleasedServiceFields(s, old)
			},
			validateUpdate: func(_ context.Context, s, old *core.Service) field.ErrorList {
				return corevalidation.ValidateServiceUpdate(s, old)
			},
			warnUpdate: func(_ context.Context, s, old *core.Service) []string {
				return serviceapi.GetWarningsForService(s, old)
			},
			prepareStatus: func(_ context.Context, s, old *core.Service) { s.Spec = old.Spec },
			validateStatus: func(_ context.Context, s, old *core.Service) field.ErrorList {
				return corevalidation.ValidateServiceStatusUpdate(s, old)
			},
		}.erase(),
	}
}

// dropReleasedServiceFields clears, on an update that changes a Service's type, the
// fields the old type used and the new one does not, where the client left them as
// they were (values the server may have filled in, and releases once they are gone; a
// client that changed one means it, and validation answers). A Service that is no
// LoadBalancer any more loses its load balancer status.
func dropReleasedServiceFields(s, old *core.Service) {
	if hasClusterIP(old) && !hasClusterIP(s) {
		if s.Spec.ClusterIP == old.Spec.ClusterIP && slices.Equal(s.Spec.ClusterIPs, old.Spec.ClusterIPs) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
		}
		if apiequality.Semantic.DeepEqual(s.Spec.IPFamilies, old.Spec.IPFamilies) {
			s.Spec.IPFamilies = nil
		}
		if familyPolicy(s) == familyPolicy(old) {
			s.Spec.IPFamilyPolicy = nil
		}
	}
	if hasNodePorts(old) && !hasNodePorts(s) && noNewNodePorts(s, old) {
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].NodePort = 0
		}
	}
	if hasHealthCheckNodePort(old) && !hasHealthCheckNodePort(s) && s.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		s.Spec.HealthCheckNodePort = 0
	}
	wasLB, isLB := old.Spec.Type == core.ServiceTypeLoadBalancer, s.Spec.Type == core.ServiceTypeLoadBalancer
	if wasLB && !isLB {
		if a, b := s.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts; a != nil && b != nil && *a == *b {
			s.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if apiequality.Semantic.DeepEqual(s.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
			s.Spec.LoadBalancerClass = nil
		}
	}
	if serviceapi.ExternallyAccessible(old) && !serviceapi.ExternallyAccessible(s) && s.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		s.Spec.ExternalTrafficPolicy = ""
	}
	if !isLB {
		s.Status.LoadBalancer = core.LoadBalancerStatus{}
	}
}

// hasClusterIP reports whether a Service of s's type has cluster IPs (or "None"):
// every type but ExternalName.
func hasClusterIP(s *core.Service) bool { return s.Spec.Type != core.ServiceTypeExternalName }

// hasNodePorts reports whether s's type has node ports: NodePort and LoadBalancer.
func hasNodePorts(s *core.Service) bool {
	return s.Spec.Type == core.ServiceTypeNodePort || s.Spec.Type == core.ServiceTypeLoadBalancer
}

// hasHealthCheckNodePort reports whether s has a health check node port: a
// LoadBalancer whose external traffic policy is Local.
func hasHealthCheckNodePort(s *core.Service) bool {
	return s.Spec.Type == core.ServiceTypeLoadBalancer && s.Spec.ExternalTrafficPolicy == core.ServiceExternalTrafficPolicyLocal
}

// familyPolicy is s's IP family policy, "" if it has none.
func familyPolicy(s *core.Service) core.IPFamilyPolicy {
	if s.Spec.IPFamilyPolicy == nil {
		return ""
	}
	return *s.Spec.IPFamilyPolicy
}

// noNewNodePorts reports whether every node port s's ports name was old's already
// (ports may be added, removed or changed otherwise).
func noNewNodePorts(s, old *core.Service) bool {
	had := map[int32]bool{}
	for _, p := range old.Spec.Ports {
		had[p.NodePort] = true
	}
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 && !had[p.NodePort] {
			return false
		}
	}
	return true
}

// ServiceIPFieldErrors returns kube's errors of the cluster IP, IP family and family
// policy fields of svc, an update of old (nil on creation), under this server's gates:
// what kube-apiserver's Service storage checks before it allocates, and answers alone
// when they are wrong. A non-nil error is not the Service's fault.
func (s *Semantics) ServiceIPFieldErrors(svc, old *corev1.Service) (field.ErrorList, error) {
	n, err := internalService(svc)
	if err != nil {
		return nil, err
	}
	var o *core.Service
	if old != nil {
		if o, err = internalService(old); err != nil {
			return nil, err
		}
	}
	var errs field.ErrorList
	s.gates.Do(func() { errs = corevalidation.ValidateServiceClusterIPsRelatedFields(n, o) })
	return errs, nil
}

// internalService is svc as kube's internal type.
func internalService(svc *corev1.Service) (*core.Service, error) {
	out := &core.Service{}
	if err := legacyscheme.Scheme.Convert(svc, out, nil); err != nil {
		return nil, fmt.Errorf("converting Service %s to kube's internal version: %w", svc.Name, err)
	}
	return out, nil
}
