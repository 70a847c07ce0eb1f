package service

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The printer columns kubectl shows, which the table hooks fill as kube-apiserver's
// printers do.
var (
	serviceColumns     = []string{"Type", "Cluster-IP", "External-IP", "Port(s)", "Age"}
	ipAddressColumns   = []string{"ParentRef", "Age"}
	serviceCIDRColumns = []string{"CIDRs", "Age"}
)

// serviceCells are a Service's TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S) and AGE.
func serviceCells(obj *unstructured.Unstructured) []interface{} {
	svc, err := typed(obj)
	if err != nil {
		return []interface{}{nil, nil, nil, nil, age(obj)}
	}
	internal := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		internal = svc.Spec.ClusterIPs[0]
	}
	ports := make([]string, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		ports[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			ports[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	portString := strings.Join(ports, ",")
	if portString == "" {
		portString = "<none>"
	}
	return []interface{}{string(svc.Spec.Type), internal, externalIP(svc), portString, age(obj)}
}

// externalIP is kube-apiserver's EXTERNAL-IP of a Service.
func externalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		lb := sets.New[string]()
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				lb.Insert(in.IP)
			} else if in.Hostname != "" {
				lb.Insert(in.Hostname)
			}
		}
		all := append(sets.List(lb), svc.Spec.ExternalIPs...)
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// ipAddressCells are an IPAddress's PARENTREF (resource.group/namespace/name) and AGE.
func ipAddressCells(obj *unstructured.Unstructured) []interface{} {
	ip := &networkingv1.IPAddress{}
	parent := "<none>"
	if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ip) == nil && ip.Spec.ParentRef != nil {
		r := ip.Spec.ParentRef
		parent = strings.ToLower(schema.GroupResource{Group: r.Group, Resource: r.Resource}.String())
		if r.Namespace != "" {
			parent += "/" + r.Namespace
		}
		parent += "/" + r.Name
	}
	return []interface{}{parent, age(obj)}
}

// serviceCIDRCells are a ServiceCIDR's CIDRS (comma-separated) and AGE.
func serviceCIDRCells(obj *unstructured.Unstructured) []interface{} {
	cidrs, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "cidrs")
	return []interface{}{strings.Join(cidrs, ","), age(obj)}
}

func age(obj *unstructured.Unstructured) string {
	return metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())
}
