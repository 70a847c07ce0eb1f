package service

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

var (
	supportedTypes = sets.New(corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort,
		corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName)
	supportedProtocols   = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
	supportedAffinities  = sets.New(corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone)
	supportedFamilies    = sets.New(corev1.IPv4Protocol, corev1.IPv6Protocol)
	supportedPolicies    = sets.New(corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack)
	supportedExternal    = sets.New(corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal)
	supportedInternal    = sets.New(corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal)
	specPath             = field.NewPath("spec")
	clusterIPsPath       = specPath.Child("clusterIPs")
	ipFamiliesPath       = specPath.Child("ipFamilies")
	ipFamilyPolicyPath   = specPath.Child("ipFamilyPolicy")
	externalTrafficPath  = specPath.Child("externalTrafficPolicy")
	healthCheckPortPath  = specPath.Child("healthCheckNodePort")
	internalTrafficPath  = specPath.Child("internalTrafficPolicy")
	sessionAffinityPath  = specPath.Child("sessionAffinity")
	sessionAffinityCPath = specPath.Child("sessionAffinityConfig")
)

// validate is Kubernetes' validation of a Service's spec (old: the stored Service of
// an update, else nil), before the allocation fills the cluster IPs, IP families and
// node ports in; the metadata is the registry's, the schema's types are checked
// already.
func validate(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	headless := isHeadless(svc)
	if len(svc.Spec.Ports) == 0 && !headless && svc.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	errs = append(errs, validateType(svc)...)
	errs = append(errs, validatePorts(svc)...)
	if svc.Spec.SessionAffinity == "" {
		errs = append(errs, field.Required(sessionAffinityPath, ""))
	} else if !supportedAffinities.Has(svc.Spec.SessionAffinity) {
		errs = append(errs, field.NotSupported(sessionAffinityPath, svc.Spec.SessionAffinity, sets.List(supportedAffinities)))
	}
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityNone && svc.Spec.SessionAffinityConfig != nil {
		errs = append(errs, field.Forbidden(sessionAffinityCPath, fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
	}
	errs = append(errs, validateClusterIPs(svc, old)...)
	var oldExternal []string
	if old != nil {
		oldExternal = old.Spec.ExternalIPs
	}
	for i, ip := range svc.Spec.ExternalIPs {
		errs = append(errs, validation.IsValidIPForLegacyField(specPath.Child("externalIPs").Index(i), ip, true, oldExternal)...)
	}
	errs = append(errs, validateTrafficPolicies(svc)...)
	if old != nil {
		errs = append(errs, validateClusterIPsUpdate(svc, old)...)
	}
	return errs
}

// validateType checks the type and what it asks of the cluster IPs and external name.
func validateType(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	switch t := svc.Spec.Type; {
	case t == "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	case !supportedTypes.Has(t):
		errs = append(errs, field.NotSupported(specPath.Child("type"), t, sets.List(supportedTypes)))
	case (t == corev1.ServiceTypeLoadBalancer || t == corev1.ServiceTypeNodePort) && isHeadless(svc):
		errs = append(errs, field.Invalid(clusterIPsPath.Index(0), svc.Spec.ClusterIPs[0], fmt.Sprintf("may not be set to 'None' for %s services", t)))
	case t == corev1.ServiceTypeExternalName:
		if len(svc.Spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(clusterIPsPath, "may not be set for ExternalName services"))
		}
		if len(svc.Spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(ipFamiliesPath, "may not be set for ExternalName services"))
		}
		if svc.Spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(ipFamilyPolicyPath, "may not be set for ExternalName services"))
		}
		// The CNAME may end in a dot, marking it fully qualified.
		if cname := strings.TrimSuffix(svc.Spec.ExternalName, "."); cname == "" {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(cname) {
				errs = append(errs, field.Invalid(specPath.Child("externalName"), cname, msg))
			}
		}
	}
	return errs
}

// validatePorts checks every port: names (required when several), numbers,
// protocols, target ports, node ports (not for ClusterIP), and duplicates.
func validatePorts(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	type key struct {
		protocol corev1.Protocol
		port     int32
	}
	ports, nodePorts := map[key]bool{}, map[key]bool{}
	for i, p := range svc.Spec.Ports {
		path := specPath.Child("ports").Index(i)
		switch {
		case len(svc.Spec.Ports) > 1 && p.Name == "":
			errs = append(errs, field.Required(path.Child("name"), ""))
		case p.Name != "":
			for _, msg := range validation.IsDNS1123Label(p.Name) {
				errs = append(errs, field.Invalid(path.Child("name"), p.Name, msg))
			}
			if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		for _, msg := range validation.IsValidPortNum(int(p.Port)) {
			errs = append(errs, field.Invalid(path.Child("port"), p.Port, msg))
		}
		if p.Protocol == "" {
			errs = append(errs, field.Required(path.Child("protocol"), ""))
		} else if !supportedProtocols.Has(p.Protocol) {
			errs = append(errs, field.NotSupported(path.Child("protocol"), p.Protocol, sets.List(supportedProtocols)))
		}
		errs = append(errs, validatePortNumOrName(p.TargetPort, path.Child("targetPort"))...)
		if p.NodePort != 0 && svc.Spec.Type == corev1.ServiceTypeClusterIP {
			errs = append(errs, field.Forbidden(path.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
		}
		if p.NodePort != 0 {
			if k := (key{p.Protocol, p.NodePort}); nodePorts[k] {
				errs = append(errs, field.Duplicate(path.Child("nodePort"), p.NodePort))
			} else {
				nodePorts[k] = true
			}
		}
		if k := (key{p.Protocol, p.Port}); ports[k] {
			errs = append(errs, field.Duplicate(path, corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}))
		} else {
			ports[k] = true
		}
	}
	return errs
}

// validatePortNumOrName checks a target port: a port number, or a port name.
func validatePortNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(path, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(path, port.StrVal, msg))
		}
	}
	return errs
}

// validateTrafficPolicies checks externalTrafficPolicy (only for NodePort and
// LoadBalancer Services), healthCheckNodePort (only with Local on a LoadBalancer) and
// internalTrafficPolicy.
func validateTrafficPolicies(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	etp := svc.Spec.ExternalTrafficPolicy
	switch {
	case !externallyAccessible(svc) && etp != "":
		errs = append(errs, field.Invalid(externalTrafficPath, etp, "may only be set for externally-accessible services"))
	case externallyAccessible(svc) && etp == "":
		errs = append(errs, field.Required(externalTrafficPath, ""))
	case externallyAccessible(svc) && !supportedExternal.Has(etp):
		errs = append(errs, field.NotSupported(externalTrafficPath, etp, sets.List(supportedExternal)))
	}
	if !needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort != 0 {
		errs = append(errs, field.Invalid(healthCheckPortPath, svc.Spec.HealthCheckNodePort,
			"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	if itp := svc.Spec.InternalTrafficPolicy; itp == nil && svc.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(internalTrafficPath, ""))
	} else if itp != nil && !supportedInternal.Has(*itp) {
		errs = append(errs, field.NotSupported(internalTrafficPath, *itp, sets.List(supportedInternal)))
	}
	return errs
}

// validateClusterIPs is Kubernetes' ValidateServiceClusterIPsRelatedFields.
func validateClusterIPs(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	if svc.Spec.ClusterIP != "" {
		if len(svc.Spec.ClusterIPs) == 0 {
			errs = append(errs, field.Required(clusterIPsPath, ""))
		} else if svc.Spec.ClusterIPs[0] != svc.Spec.ClusterIP {
			errs = append(errs, field.Invalid(clusterIPsPath, svc.Spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(svc.Spec.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(clusterIPsPath, svc.Spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := sets.New[corev1.IPFamily]()
	for i, f := range svc.Spec.IPFamilies {
		if !supportedFamilies.Has(f) {
			errs = append(errs, field.NotSupported(ipFamiliesPath.Index(i), f, sets.List(supportedFamilies)))
		}
		if seen.Has(f) {
			errs = append(errs, field.Duplicate(ipFamiliesPath.Index(i), f))
		}
		seen.Insert(f)
	}
	if p := svc.Spec.IPFamilyPolicy; p != nil && !supportedPolicies.Has(*p) {
		errs = append(errs, field.NotSupported(ipFamilyPolicyPath, p, sets.List(supportedPolicies)))
	}
	var existing []string
	if old != nil {
		existing = old.Spec.ClusterIPs
	}
	invalid := false
	for i, ip := range svc.Spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(svc.Spec.ClusterIPs) > 1 {
				invalid = true
				errs = append(errs, field.Invalid(clusterIPsPath, svc.Spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		ipErrs := validation.IsValidIPForLegacyField(clusterIPsPath.Index(i), ip, true, existing)
		invalid = invalid || len(ipErrs) > 0
		errs = append(errs, ipErrs...)
	}
	if len(svc.Spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(clusterIPsPath, svc.Spec.ClusterIPs, "may only hold up to 2 values"))
	}
	if invalid {
		return errs
	}
	if len(svc.Spec.ClusterIPs) > 1 {
		if dual, _ := netutils.IsDualStackIPStrings(svc.Spec.ClusterIPs); !dual {
			errs = append(errs, field.Invalid(clusterIPsPath, svc.Spec.ClusterIPs, "may specify no more than one IP for each IP family"))
		}
	}
	if !isHeadless(svc) {
		for i, ip := range svc.Spec.ClusterIPs {
			if i >= len(svc.Spec.IPFamilies) {
				break
			}
			if f := svc.Spec.IPFamilies[i]; f == corev1.IPv4Protocol && netutils.IsIPv6String(ip) || f == corev1.IPv6Protocol && !netutils.IsIPv6String(ip) {
				errs = append(errs, field.Invalid(clusterIPsPath.Index(i), ip, fmt.Sprintf("expected an %s value as indicated by `ipFamilies[%d]`", f, i)))
			}
		}
	}
	return errs
}

// validateClusterIPsUpdate is Kubernetes' rule that cluster IPs and IP families may
// grow or shrink by the secondary one but never change, unless to or from
// ExternalName. (That shrinking takes SingleStack is the allocation's to say, as in
// Kubernetes, where it runs first.)
func validateClusterIPsUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadless(svc) && isHeadless(old) {
		return nil
	}
	var errs field.ErrorList
	now, was := svc.Spec.ClusterIPs, old.Spec.ClusterIPs
	switch {
	case len(was) == len(now):
		for i := range was {
			if was[i] != now[i] {
				errs = append(errs, field.Invalid(clusterIPsPath.Index(i), now, "may not change once set"))
			}
		}
	case len(was) > len(now):
		if len(now) == 0 {
			errs = append(errs, field.Invalid(clusterIPsPath.Index(0), now, "primary clusterIP can not be unset"))
		} else if now[0] != was[0] {
			errs = append(errs, field.Invalid(clusterIPsPath.Index(0), now, "may not change once set"))
		}
	case len(was) > 0 && now[0] != was[0]:
		errs = append(errs, field.Invalid(clusterIPsPath.Index(0), now, "may not change once set"))
	}
	if isHeadless(svc) != isHeadless(old) || isHeadless(svc) {
		return errs
	}
	nowF, wasF := svc.Spec.IPFamilies, old.Spec.IPFamilies
	switch {
	case len(wasF) == len(nowF):
		for i := range wasF {
			if wasF[i] != nowF[i] {
				errs = append(errs, field.Invalid(ipFamiliesPath.Index(0), nowF, "may not change once set"))
			}
		}
	case len(wasF) > len(nowF) && len(nowF) > 0 && nowF[0] != wasF[0],
		len(wasF) < len(nowF) && len(wasF) > 0 && nowF[0] != wasF[0]:
		errs = append(errs, field.Invalid(ipFamiliesPath.Index(0), svc.Spec.ClusterIPs, "may not change once set"))
	}
	return errs
}

// isHeadless reports whether svc asked for no cluster IP ("None").
func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// externallyAccessible reports whether svc is reachable from outside (NodePort,
// LoadBalancer, or ClusterIP with external IPs), as Kubernetes decides it.
func externallyAccessible(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort ||
		(svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
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
