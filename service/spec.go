package service

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The paths of the Service fields the allocation's errors name.
var (
	specPath           = field.NewPath("spec")
	clusterIPsPath     = specPath.Child("clusterIPs")
	ipFamiliesPath     = specPath.Child("ipFamilies")
	ipFamilyPolicyPath = specPath.Child("ipFamilyPolicy")
)

// isHeadless reports whether svc asked for no cluster IP ("None").
func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// needsHealthCheck reports whether svc gets a health check node port: a
// LoadBalancer with externalTrafficPolicy Local.
func needsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// needsClusterIP reports whether svc has (or asks for) a cluster IP field: every type
// but ExternalName.
func needsClusterIP(svc *corev1.Service) bool { return svc.Spec.Type != corev1.ServiceTypeExternalName }

// needsNodePorts reports whether svc's ports get node ports.
func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}
