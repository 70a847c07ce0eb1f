package kubesemantics

import (
	"context"
	"fmt"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/apis/networking"
	netvalidation "k8s.io/kubernetes/pkg/apis/networking/validation"
	"k8s.io/kubernetes/pkg/features"

	_ "k8s.io/kubernetes/pkg/apis/networking/install" // networking's types, defaults and conversions
)

func init() { groups = append(groups, networkingKinds) }

// legacyIngressClassAnnotation is the annotation that named an Ingress's class before
// spec.ingressClassName.
const legacyIngressClassAnnotation = "kubernetes.io/ingress.class"

// networkingKinds are the strategies of group networking.k8s.io.
func networkingKinds() map[schema.GroupResource]strategy {
	group := func(r string) schema.GroupResource {
		return schema.GroupResource{Group: networking.GroupName, Resource: r}
	}
	return map[schema.GroupResource]strategy{
		group("ingresses"):       ingressKind().erase(),
		group("ingressclasses"):  ingressClassKind().erase(),
		group("networkpolicies"): networkPolicyKind().erase(),
		group("ipaddresses"):     ipAddressKind().erase(),
		group("servicecidrs"):    serviceCIDRKind().erase(),
	}
}

func ingressKind() kind[*networking.Ingress] {
	return kind[*networking.Ingress]{
		prepareCreate: func(_ context.Context, in *networking.Ingress) {
			in.Status, in.Generation = networking.IngressStatus{}, 1
		},
		validate: func(_ context.Context, in *networking.Ingress) field.ErrorList {
			return netvalidation.ValidateIngressCreate(in)
		},
		warnCreate: func(_ context.Context, in *networking.Ingress) []string { return ingressClassWarnings(in) },
		prepareUpdate: func(_ context.Context, in, old *networking.Ingress) {
			in.Status = old.Status
			if !apiequality.Semantic.DeepEqual(in.Spec, old.Spec) {
				in.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, in, old *networking.Ingress) field.ErrorList {
			return netvalidation.ValidateIngressUpdate(in, old)
		},
		prepareStatus: func(_ context.Context, in, old *networking.Ingress) { in.Spec = old.Spec },
		validateStatus: func(_ context.Context, in, old *networking.Ingress) field.ErrorList {
			return netvalidation.ValidateIngressStatusUpdate(in, old)
		},
		warnStatus: func(_ context.Context, in, _ *networking.Ingress) []string { return loadBalancerIPWarnings(in) },
	}
}

// ingressClassWarnings warns of an Ingress that names its class by the deprecated
// annotation alone.
func ingressClassWarnings(in *networking.Ingress) []string {
	if _, ok := in.Annotations[legacyIngressClassAnnotation]; ok && in.Spec.IngressClassName == nil {
		return []string{fmt.Sprintf("annotation %q is deprecated, please use 'spec.ingressClassName' instead", legacyIngressClassAnnotation)}
	}
	return nil
}

// loadBalancerIPWarnings warns of the IPs of an Ingress's load balancer written in a
// form that is valid but ambiguous (leading zeros, IPv4-mapped IPv6...).
func loadBalancerIPWarnings(in *networking.Ingress) []string {
	var out []string
	path := field.NewPath("status", "loadBalancer", "ingress")
	for i, lb := range in.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			out = append(out, utilvalidation.GetWarningsForIP(path.Index(i), lb.IP)...)
		}
	}
	return out
}

func ingressClassKind() kind[*networking.IngressClass] {
	return kind[*networking.IngressClass]{
		prepareCreate: func(_ context.Context, c *networking.IngressClass) { c.Generation = 1 },
		validate: func(_ context.Context, c *networking.IngressClass) field.ErrorList {
			return netvalidation.ValidateIngressClass(c)
		},
		prepareUpdate: func(_ context.Context, c, old *networking.IngressClass) {
			if !apiequality.Semantic.DeepEqual(c.Spec, old.Spec) {
				c.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, c, old *networking.IngressClass) field.ErrorList {
			return netvalidation.ValidateIngressClassUpdate(c, old)
		},
	}
}

func networkPolicyKind() kind[*networking.NetworkPolicy] {
	return kind[*networking.NetworkPolicy]{
		prepareCreate: func(_ context.Context, np *networking.NetworkPolicy) { np.Generation = 1 },
		validate: func(_ context.Context, np *networking.NetworkPolicy) field.ErrorList {
			return netvalidation.ValidateNetworkPolicy(np, netvalidation.ValidationOptionsForNetworking(np, nil))
		},
		warnCreate: func(_ context.Context, np *networking.NetworkPolicy) []string { return ipBlockWarnings(np) },
		prepareUpdate: func(_ context.Context, np, old *networking.NetworkPolicy) {
			// kube compares the specs strictly here: an empty list replacing an
			// absent one counts as a change.
			if !reflect.DeepEqual(np.Spec, old.Spec) {
				np.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, np, old *networking.NetworkPolicy) field.ErrorList {
			return netvalidation.ValidateNetworkPolicyUpdate(np, old, netvalidation.ValidationOptionsForNetworking(np, old))
		},
		warnUpdate: func(_ context.Context, np, _ *networking.NetworkPolicy) []string { return ipBlockWarnings(np) },
	}
}

// ipBlockWarnings warns of the CIDRs of a NetworkPolicy's ipBlocks, ingress and
// egress, written in a valid but ambiguous form.
func ipBlockWarnings(np *networking.NetworkPolicy) []string {
	var out []string
	for i, rule := range np.Spec.Ingress {
		for j, peer := range rule.From {
			out = append(out, cidrWarnings(peer.IPBlock, field.NewPath("spec", "ingress").Index(i).Child("from").Index(j).Child("ipBlock"))...)
		}
	}
	for i, rule := range np.Spec.Egress {
		for j, peer := range rule.To {
			out = append(out, cidrWarnings(peer.IPBlock, field.NewPath("spec", "egress").Index(i).Child("to").Index(j).Child("ipBlock"))...)
		}
	}
	return out
}

// cidrWarnings are the warnings of one ipBlock (none if nil) at path.
func cidrWarnings(block *networking.IPBlock, path *field.Path) []string {
	if block == nil {
		return nil
	}
	out := utilvalidation.GetWarningsForCIDR(path.Child("cidr"), block.CIDR)
	for k, except := range block.Except {
		out = append(out, utilvalidation.GetWarningsForCIDR(path.Child("except").Index(k), except)...)
	}
	return out
}

func ipAddressKind() kind[*networking.IPAddress] {
	return kind[*networking.IPAddress]{
		validate: func(_ context.Context, ip *networking.IPAddress) field.ErrorList {
			return netvalidation.ValidateIPAddress(ip)
		},
		validateUpdate: func(_ context.Context, ip, old *networking.IPAddress) field.ErrorList {
			return append(netvalidation.ValidateIPAddress(ip), netvalidation.ValidateIPAddressUpdate(ip, old)...)
		},
	}
}

func serviceCIDRKind() kind[*networking.ServiceCIDR] {
	return kind[*networking.ServiceCIDR]{
		prepareCreate: func(_ context.Context, c *networking.ServiceCIDR) {
			if serviceCIDRStatusWiped() {
				c.Status = networking.ServiceCIDRStatus{}
			}
		},
		validate: func(_ context.Context, c *networking.ServiceCIDR) field.ErrorList {
			return netvalidation.ValidateServiceCIDR(c)
		},
		prepareUpdate: func(_ context.Context, c, old *networking.ServiceCIDR) {
			if serviceCIDRStatusWiped() {
				c.Status = old.Status
			}
		},
		validateUpdate: func(_ context.Context, c, old *networking.ServiceCIDR) field.ErrorList {
			return netvalidation.ValidateServiceCIDRUpdate(c, old)
		},
		prepareStatus: func(_ context.Context, c, old *networking.ServiceCIDR) {
			c.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&c.ObjectMeta, &old.ObjectMeta)
		},
		validateStatus: func(_ context.Context, c, old *networking.ServiceCIDR) field.ErrorList {
			return netvalidation.ValidateServiceCIDRStatusUpdate(c, old)
		},
	}
}

// serviceCIDRStatusWiped reports whether a ServiceCIDR's status is the status
// subresource's alone (writes of the main resource neither set nor change it).
func serviceCIDRStatusWiped() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.ServiceCIDRStatusFieldWiping)
}
