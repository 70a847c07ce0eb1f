package service

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Kubernetes' defaults of the ranges (kube-apiserver's --service-cluster-ip-range and
// --service-node-port-range).
const (
	DefaultClusterIPRange = "10.0.0.0/24"
	DefaultNodePortRange  = "30000-32767"
)

// DefaultServiceCIDR names the ServiceCIDR of --service-cluster-ip-range.
const DefaultServiceCIDR = "kubernetes"

// The resources this package reads and writes.
var (
	GroupResource  = schema.GroupResource{Resource: "services"}
	IPAddresses    = schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}
	ServiceCIDRs   = schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}
	EndpointSlices = schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}
)

// Errors of the flags, each the flag's name: the message goes on to say what is
// allowed.
var (
	ErrInvalidIPRange   = errors.New("--service-cluster-ip-range")
	ErrInvalidPortRange = errors.New("--service-node-port-range")
)

// minRangeBits: a cluster IP range has at least 8 addresses (kube-apiserver's rule).
const minRangeBits = 3

// ParseClusterIPRanges parses --service-cluster-ip-range: one CIDR, or two of
// different IP families (dual-stack), as kube-apiserver accepts them; an IPv6 range is
// a /64 or smaller, and every range has at least 8 addresses.
func ParseClusterIPRanges(s string) ([]netip.Prefix, error) {
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" || len(parts) > 2 {
		return nil, fmt.Errorf("%w %q must be one CIDR (e.g. 10.0.0.0/24), or two of different IP families", ErrInvalidIPRange, s)
	}
	out := make([]netip.Prefix, 0, len(parts))
	for _, p := range parts {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a CIDR (e.g. 10.0.0.0/24)", ErrInvalidIPRange, p)
		}
		prefix = prefix.Masked()
		if prefix.Addr().Is6() && prefix.Bits() < 64 {
			return nil, fmt.Errorf("%w: %s is too large: an IPv6 range must be a /64 or smaller", ErrInvalidIPRange, prefix)
		}
		if prefix.Addr().BitLen()-prefix.Bits() < minRangeBits {
			return nil, fmt.Errorf("%w: %s is too small: a range must hold at least %d IP addresses", ErrInvalidIPRange, prefix, 1<<minRangeBits)
		}
		out = append(out, prefix)
	}
	if len(out) == 2 && out[0].Addr().Is4() == out[1].Addr().Is4() {
		return nil, fmt.Errorf("%w %q: two CIDRs must be of different IP families (one IPv4, one IPv6)", ErrInvalidIPRange, s)
	}
	return out, nil
}

// ParseNodePortRange parses --service-node-port-range ("30000-32767", inclusive at
// both ends, as kube-apiserver's; a single port, or "base+size", as Kubernetes'
// PortRange).
func ParseNodePortRange(s string) (utilnet.PortRange, error) {
	pr, err := utilnet.ParsePortRange(s)
	if err != nil || pr.Size == 0 || pr.Base < 1 {
		return utilnet.PortRange{}, fmt.Errorf("%w %q is not a port range such as 30000-32767 (inclusive, ports 1 to 65535)", ErrInvalidPortRange, s)
	}
	return *pr, nil
}

// PrimaryIPFamily returns the IP family of the cluster's first service IP range, the
// family a Service proxy prefers: IPv4 for Services without cluster IPs (nil).
func (s *Services) PrimaryIPFamily() corev1.IPFamily {
	if s == nil || len(s.cfg.ClusterIPRanges) == 0 {
		return corev1.IPv4Protocol
	}
	return familyOf(s.cfg.ClusterIPRanges[0].Addr())
}

// familyOf returns the IP family of an address.
func familyOf(a netip.Addr) corev1.IPFamily {
	if a.Unmap().Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}
