package service

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	networkingv1listers "k8s.io/client-go/listers/networking/v1"
)

// The allocators' errors, in Kubernetes' words.
var (
	ErrFull              = errors.New("range is full")
	ErrAllocated         = errors.New("provided IP is already allocated")
	ErrMismatchedNetwork = errors.New("the provided network does not match the current range")
)

// IPAllocatorName is the value of the managed-by label of the IPAddresses the
// allocator creates, Kubernetes' (networking.k8s.io/v1 LabelManagedBy).
const IPAllocatorName = "ipallocator.k8s.io"

// ipAllocator hands out cluster IPs as IPAddress objects, created through client only
// if absent, from the ranges of the ServiceCIDRs (and of --service-cluster-ip-range,
// which stands for the default ServiceCIDR until it is read).
type ipAllocator struct {
	flags     []netip.Prefix
	cidrs     networkingv1listers.ServiceCIDRLister
	addresses networkingv1listers.IPAddressLister
	client    networkingv1client.IPAddressesGetter
}

// families returns the IP families the cluster allocates, the primary first.
func (a *ipAllocator) families() []corev1.IPFamily {
	var out []corev1.IPFamily
	for _, p := range a.flags {
		out = append(out, familyOf(p.Addr()))
	}
	return out
}

// ranges returns the ranges of family: the ServiceCIDRs' (those not being deleted),
// the default one first. Until the default one is read, --service-cluster-ip-range
// stands for it; once it is, it decides, whatever this server's flag says (a server
// whose flag differs allocates from the cluster's ranges, as every other server does).
func (a *ipAllocator) ranges(family corev1.IPFamily) []netip.Prefix {
	var out []netip.Prefix
	add := func(p netip.Prefix) {
		if familyOf(p.Addr()) == family && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if _, err := a.cidrs.Get(DefaultServiceCIDR); err != nil {
		for _, p := range a.flags {
			add(p)
		}
	}
	all, _ := a.cidrs.List(labels.Everything())
	slices.SortFunc(all, func(x, y *networkingv1.ServiceCIDR) int { return cmpNames(x.Name, y.Name) })
	for _, c := range all {
		if c.DeletionTimestamp != nil {
			continue
		}
		for _, s := range c.Spec.CIDRs {
			if p, err := netip.ParsePrefix(s); err == nil {
				add(p.Masked())
			}
		}
	}
	return out
}

func cmpNames(x, y string) int {
	switch {
	case x == DefaultServiceCIDR:
		return -1
	case y == DefaultServiceCIDR:
		return 1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// contains reports whether a Service may hold addr: it is within a range, neither
// its network address nor, in IPv4, its broadcast address (Kubernetes' rule).
func (a *ipAllocator) contains(addr netip.Addr) bool {
	for _, p := range a.ranges(familyOf(addr)) {
		if first, last := usable(p); !addr.Less(first) && !last.Less(addr) {
			return true
		}
	}
	return false
}

// allocate reserves ip (empty: any free one of family) for svc and returns it. With
// dryRun it reserves nothing.
func (a *ipAllocator) allocate(ctx context.Context, svc *corev1.Service, family corev1.IPFamily, ip string, dryRun bool) (netip.Addr, error) {
	if ip != "" {
		addr, err := netip.ParseAddr(ip)
		if err != nil {
			return netip.Addr{}, err
		}
		return addr, a.allocateStatic(ctx, svc, addr.Unmap(), dryRun)
	}
	for _, p := range a.ranges(family) {
		addr, err := a.allocateNext(ctx, svc, p, dryRun)
		if !errors.Is(err, ErrFull) {
			return addr, err
		}
	}
	return netip.Addr{}, ErrFull
}

// allocateStatic reserves addr for svc.
func (a *ipAllocator) allocateStatic(ctx context.Context, svc *corev1.Service, addr netip.Addr, dryRun bool) error {
	if !a.contains(addr) {
		return ErrMismatchedNetwork
	}
	if dryRun {
		if _, err := a.addresses.Get(addr.String()); err == nil {
			return ErrAllocated
		}
		return nil
	}
	return a.create(ctx, svc, addr)
}

// allocateNext reserves a free address of p for svc: from a random place in the
// upper part of the range first, the lower part (kept for requested addresses,
// KEP-3070) once the upper is full.
func (a *ipAllocator) allocateNext(ctx context.Context, svc *corev1.Service, p netip.Prefix, dryRun bool) (netip.Addr, error) {
	first, last := usable(p)
	parts := [][2]netip.Addr{{first, last}}
	if offset := rangeOffset(p); offset > 0 {
		parts = [][2]netip.Addr{{add(first, offset), last}, {first, add(first, offset-1)}}
	}
	for _, part := range parts {
		lo, hi := part[0], part[1]
		if hi.Less(lo) {
			continue
		}
		n := span(lo, hi)
		start := rand.Uint64N(n) //nolint:gosec // spreading, not secrecy
		for i := range min(n, maxProbes) {
			addr := add(lo, (start+i)%n)
			if _, err := a.addresses.Get(addr.String()); err == nil {
				continue
			}
			if dryRun {
				return addr, nil
			}
			err := a.create(ctx, svc, addr)
			if errors.Is(err, ErrAllocated) {
				continue // another server got it first
			}
			return addr, err
		}
	}
	return netip.Addr{}, ErrFull
}

// maxProbes bounds the addresses one allocation tries in one part of a range.
const maxProbes = 1 << 16

// create writes the IPAddress of addr for svc, only if absent.
func (a *ipAllocator) create(ctx context.Context, svc *corev1.Service, addr netip.Addr) error {
	_, err := a.client.IPAddresses().Create(ctx, ipAddressFor(svc, addr), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return ErrAllocated
	}
	return err
}

// ipAddressFor is the IPAddress that records addr as svc's.
func ipAddressFor(svc *corev1.Service, addr netip.Addr) *networkingv1.IPAddress {
	return &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: addr.String(), Labels: map[string]string{
			networkingv1.LabelIPAddressFamily: string(familyOf(addr)),
			networkingv1.LabelManagedBy:       IPAllocatorName,
		}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
			Resource: "services", Namespace: svc.Namespace, Name: svc.Name}},
	}
}

// release deletes the IPAddress of ip if it is still svc's.
func (a *ipAllocator) release(ctx context.Context, svc *corev1.Service, ip string) error {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return nil // nothing was allocated for it
	}
	cur, err := a.client.IPAddresses().Get(ctx, addr.Unmap().String(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !refersTo(cur, svc) {
		return nil
	}
	err = a.client.IPAddresses().Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// refersTo reports whether ip's parent is svc.
func refersTo(ip *networkingv1.IPAddress, svc *corev1.Service) bool {
	r := ip.Spec.ParentRef
	return r != nil && r.Group == "" && r.Resource == "services" && r.Namespace == svc.Namespace && r.Name == svc.Name
}

// usable returns the first and last addresses of p a Service may get: not the
// network's address, nor an IPv4 range's broadcast address.
func usable(p netip.Prefix) (first, last netip.Addr) {
	first = p.Masked().Addr().Next()
	last = lastAddr(p)
	if p.Addr().Is4() {
		last = last.Prev()
	}
	return first, last
}

// lastAddr returns the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// rangeOffset is KEP-3070's split of a range: the first addresses are kept for
// requested IPs (min(max(16, size/16), 256); none below 16 addresses).
func rangeOffset(p netip.Prefix) uint64 {
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits <= 4 {
		return 0
	}
	if hostBits >= 12 {
		return 256
	}
	return max(16, (uint64(1)<<hostBits)/16)
}

// add returns a+n (within the 128-bit space).
func add(a netip.Addr, n uint64) netip.Addr {
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	nlo := lo + n
	if nlo < lo {
		hi++
	}
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], nlo)
	out := netip.AddrFrom16(b)
	if a.Is4() {
		return out.Unmap()
	}
	return out
}

// span returns how many addresses [lo, hi] holds, capped at 2^63.
func span(lo, hi netip.Addr) uint64 {
	x, y := lo.As16(), hi.As16()
	xh, xl := binary.BigEndian.Uint64(x[:8]), binary.BigEndian.Uint64(x[8:])
	yh, yl := binary.BigEndian.Uint64(y[:8]), binary.BigEndian.Uint64(y[8:])
	if yh-xh > 1 || (yh != xh && yl >= xl) {
		return 1 << 63
	}
	d := yl - xl
	if d >= 1<<63-1 {
		return 1 << 63
	}
	return d + 1
}
