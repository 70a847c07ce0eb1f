package service

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// initIPFamilies sets a Service's ipFamilyPolicy and ipFamilies from what it asks and
// what the cluster allocates, as Kubernetes does before it allocates (was: the stored
// Service of an update, else nil). A family the cluster has no range of, or
// dual-stack on a single-stack cluster, is a 422.
func (s *Services) initIPFamilies(svc, was *corev1.Service) error {
	if !needsClusterIP(svc) || matchingPreferDualStack(svc, was) {
		return nil
	}
	configured := s.ips.families()
	spec := &svc.Spec
	if spec.IPFamilyPolicy == nil {
		switch {
		case was != nil && was.Spec.IPFamilyPolicy != nil:
			spec.IPFamilyPolicy = was.Spec.IPFamilyPolicy
		case spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0:
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		default:
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		}
	}
	if s.ipFields != nil {
		el, err := s.ipFields(svc, was)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if len(el) > 0 {
			return apierrors.NewInvalid(serviceKind, svc.Name, el)
		}
	}
	el := s.familyErrors(svc, was)
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		addr, err := netip.ParseAddr(ip)
		if err != nil || i < len(spec.IPFamilies) {
			continue
		}
		if f := familyOf(addr); !slices.Contains(configured, f) {
			el = append(el, field.Invalid(clusterIPsPath.Index(i), spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", f)))
		} else {
			spec.IPFamilies = append(spec.IPFamilies, f)
		}
	}
	if len(el) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, el)
	}
	if spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0 {
		// Headless and selectorless: any family, dual-stack unless asked otherwise.
		if len(spec.IPFamilies) == 0 {
			spec.IPFamilies = []corev1.IPFamily{configured[0]}
		}
		if len(spec.IPFamilies) < 2 && *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			spec.IPFamilies = append(spec.IPFamilies, otherFamily(spec.IPFamilies[0]))
		}
		return nil
	}
	if *spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack && len(configured) < 2 {
		el = append(el, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, f := range spec.IPFamilies {
		if !slices.Contains(configured, f) {
			el = append(el, field.Invalid(ipFamiliesPath.Index(i), f, "not configured on this cluster"))
		}
	}
	if len(el) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, el)
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{configured[0]}
	}
	if *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack && len(spec.IPFamilies) == 1 && len(configured) == 2 {
		spec.IPFamilies = append(spec.IPFamilies, otherFamily(spec.IPFamilies[0]))
	}
	return nil
}

// familyErrors are the policy's conflicts with the cluster IPs and families asked
// for, and, on an update, a secondary IP or family released without SingleStack.
func (s *Services) familyErrors(svc, was *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	var el field.ErrorList
	single := *spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack
	if was != nil {
		switch {
		case single:
			if slices.Equal(was.Spec.ClusterIPs, spec.ClusterIPs) && len(spec.ClusterIPs) > 1 {
				spec.ClusterIPs = spec.ClusterIPs[:1]
			}
			if slices.Equal(was.Spec.IPFamilies, spec.IPFamilies) && len(spec.IPFamilies) > 1 {
				spec.IPFamilies = spec.IPFamilies[:1]
			}
		default:
			if len(spec.ClusterIPs) < len(was.Spec.ClusterIPs) && len(spec.ClusterIPs) > 0 {
				el = append(el, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary cluster IP"))
			}
			if len(spec.IPFamilies) < len(was.Spec.IPFamilies) && len(spec.IPFamilies) > 0 {
				el = append(el, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary IP family"))
			}
		}
	}
	if single && len(spec.ClusterIPs) == 2 {
		el = append(el, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
	}
	if single && len(spec.IPFamilies) == 2 {
		el = append(el, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
	}
	return el
}

// matchingPreferDualStack reports whether an update leaves a PreferDualStack
// Service's IPs and families as they were: it is not upgraded or downgraded when the
// cluster's families change.
func matchingPreferDualStack(svc, was *corev1.Service) bool {
	if was == nil || was.Spec.IPFamilyPolicy == nil || *was.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyPreferDualStack {
		return false
	}
	if svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyPreferDualStack {
		return false
	}
	return slices.Equal(was.Spec.ClusterIPs, svc.Spec.ClusterIPs) && slices.Equal(was.Spec.IPFamilies, svc.Spec.IPFamilies)
}

func otherFamily(f corev1.IPFamily) corev1.IPFamily {
	if f == corev1.IPv4Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
