package service

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	networkingv1listers "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// serviceKind names Services in 422s, as Kubernetes does ("Service \"x\" is invalid").
var serviceKind = schema.GroupKind{Kind: "Service"}

// syncWait is how long an allocation waits for the allocator's informers at most
// before it answers 503 (they sync within moments of the server's start).
const syncWait = 5 * time.Second

// Config is what Services needs.
type Config struct {
	// ClusterIPRanges are --service-cluster-ip-range's: one, or one per IP family, the
	// primary (default) family first.
	ClusterIPRanges []netip.Prefix
	// NodePorts is --service-node-port-range.
	NodePorts utilnet.PortRange
	// Raw holds the node port records.
	Raw *storage.Store
	// ServiceCIDRs and IPAddresses are informers of typed objects
	// (*networkingv1.ServiceCIDR, *networkingv1.IPAddress) their owner runs.
	ServiceCIDRs, IPAddresses cache.SharedIndexInformer
	// Client writes IPAddresses (through the server's API, loopback).
	Client networkingv1client.NetworkingV1Interface
}

// Services gives core/v1 Services their behaviour: Kubernetes' defaults and
// validation, and cluster IPs and node ports allocated in the store's writes. It is
// safe for concurrent use.
type Services struct {
	cfg    Config
	ips    *ipAllocator
	ports  *portAllocator
	synced []cache.InformerSynced
	// ipFields, if set, are Kubernetes' errors of a Service's cluster IP fields,
	// which the allocation checks first (see CheckIPFieldsWith).
	ipFields IPFieldErrors
}

// IPFieldErrors returns Kubernetes' errors of the cluster IP, IP family and family
// policy fields of svc, an update of old (nil on creation); a non-nil error is not the
// Service's fault.
type IPFieldErrors func(svc, old *corev1.Service) (field.ErrorList, error)

// CheckIPFieldsWith makes the allocation refuse, with their errors alone, Services
// whose cluster IP fields check finds wrong, before it looks at them, as
// kube-apiserver's Service storage does. It must be called before the Services serve.
func (s *Services) CheckIPFieldsWith(check IPFieldErrors) { s.ipFields = check }

// New returns the Services behaviour of cfg.
func New(cfg Config) *Services {
	return &Services{
		cfg: cfg,
		ips: &ipAllocator{
			flags:     cfg.ClusterIPRanges,
			cidrs:     networkingv1listers.NewServiceCIDRLister(cfg.ServiceCIDRs.GetIndexer()),
			addresses: networkingv1listers.NewIPAddressLister(cfg.IPAddresses.GetIndexer()),
			client:    cfg.Client,
		},
		ports:  &portAllocator{raw: cfg.Raw, ports: cfg.NodePorts},
		synced: []cache.InformerSynced{cfg.ServiceCIDRs.HasSynced, cfg.IPAddresses.HasSynced},
	}
}

// Configure gives res, the services resource (stored in v1), its hooks: what
// kube-apiserver's Service storage does around the strategy, whose defaults,
// preparation and validation package kubesemantics gives: clusterIP and clusterIPs
// kept in step, the values an update leaves out that were allocated kept, and the
// allocation itself.
func (s *Services) Configure(res *registry.Resource) error {
	if res.StorageVersion != "v1" {
		return fmt.Errorf("services must be stored in v1, not %s", res.StorageVersion)
	}
	res.Hooks = &registry.Hooks{
		PrepareForCreate: func(_ context.Context, obj *unstructured.Unstructured) {
			s.edit(obj, func(svc *corev1.Service) { normalizeClusterIPs(svc, nil) })
		},
		PrepareForUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) {
			was, err := typed(old)
			if err != nil {
				return
			}
			s.edit(obj, func(svc *corev1.Service) {
				patchAllocatedValues(svc, was)
				normalizeClusterIPs(svc, was)
			})
		},
		Allocate: s.allocate,
		Release:  s.release,
	}
	if res.HasPrinterColumns(serviceColumns) {
		res.Hooks.TableCells = serviceCells
	}
	return nil
}

// edit applies change to obj's spec as a typed Service.
func (s *Services) edit(obj *unstructured.Unstructured, change func(svc *corev1.Service)) {
	svc, err := typed(obj)
	if err != nil {
		return // the schema validation names what is wrong
	}
	change(svc)
	_ = putSpec(obj, svc)
}

// typed converts a Service in v1 to its Go type.
func typed(obj *unstructured.Unstructured) (*corev1.Service, error) {
	svc := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, svc); err != nil {
		return nil, err
	}
	return svc, nil
}

// putSpec writes svc's spec into obj.
func putSpec(obj *unstructured.Unstructured, svc *corev1.Service) error {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&svc.Spec)
	if err != nil {
		return err
	}
	obj.Object["spec"] = spec
	return nil
}

// allocate is the Allocate hook: the IP families, cluster IPs and node ports of a new
// or updated Service.
func (s *Services) allocate(ctx context.Context, obj, old *unstructured.Unstructured, dryRun bool) (registry.Allocation, error) {
	svc, err := typed(obj)
	if err != nil {
		return registry.Allocation{}, apierrors.NewBadRequest(err.Error())
	}
	var was *corev1.Service
	if old != nil {
		if was, err = typed(old); err != nil {
			return registry.Allocation{}, apierrors.NewInternalError(err)
		}
	}
	if err := s.waitSynced(ctx); err != nil {
		return registry.Allocation{}, err
	}
	if err := s.initIPFamilies(svc, was); err != nil {
		return registry.Allocation{}, err
	}
	t := &txn{s: s, svc: svc}
	if err := s.allocateClusterIPs(ctx, t, svc, was, dryRun); err != nil {
		t.revert(ctx)
		return registry.Allocation{}, err
	}
	if err := s.allocateNodePorts(ctx, t, svc, was, dryRun); err != nil {
		t.revert(ctx)
		return registry.Allocation{}, err
	}
	if err := putSpec(obj, svc); err != nil {
		t.revert(ctx)
		return registry.Allocation{}, apierrors.NewInternalError(err)
	}
	if dryRun {
		return registry.Allocation{}, nil
	}
	return registry.Allocation{Commit: t.commit, Revert: t.revert}, nil
}

// waitSynced waits a little for the allocator's informers, else answers 503.
func (s *Services) waitSynced(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), s.synced...) {
		return apierrors.NewServiceUnavailable("the Service IP allocator has not read the ServiceCIDRs and IPAddresses yet")
	}
	return nil
}

// release is the Release hook: a deleted Service's cluster IPs and node ports.
func (s *Services) release(ctx context.Context, obj *unstructured.Unstructured) {
	svc, err := typed(obj)
	if err != nil {
		return
	}
	t := &txn{s: s, svc: svc}
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != corev1.ClusterIPNone && ip != "" {
			t.releaseIPs = append(t.releaseIPs, ip)
		}
	}
	t.releasePorts = nodePortsOf(svc)
	t.commit(ctx)
}

// txn is one write's allocation: what it reserved (freed on revert) and what the
// Service gave up (freed on commit).
type txn struct {
	s                   *Services
	svc                 *corev1.Service
	ips, releaseIPs     []string
	ports, releasePorts []int
}

func (t *txn) commit(ctx context.Context) {
	t.free(ctx, t.releaseIPs, t.releasePorts)
}

func (t *txn) revert(ctx context.Context) {
	t.free(ctx, t.ips, t.ports)
}

func (t *txn) free(ctx context.Context, ips []string, ports []int) {
	logger := klog.FromContext(ctx)
	for _, ip := range ips {
		if err := t.s.ips.release(ctx, t.svc, ip); err != nil {
			logger.Error(err, "Cannot release a cluster IP; the repair controller will", "service", klog.KObj(t.svc), "ip", ip)
		}
	}
	for _, p := range ports {
		if err := t.s.ports.release(ctx, t.svc, p); err != nil {
			logger.Error(err, "Cannot release a node port; the repair controller will", "service", klog.KObj(t.svc), "nodePort", p)
		}
	}
}

// allocateClusterIPs reserves the cluster IPs of a new Service, or those an update
// adds (from ExternalName, or a second IP family), and marks those it gives up.
func (s *Services) allocateClusterIPs(ctx context.Context, t *txn, svc, was *corev1.Service, dryRun bool) error {
	switch {
	case !needsClusterIP(svc):
		if was != nil && needsClusterIP(was) && !isHeadless(was) {
			t.releaseIPs = append(t.releaseIPs, was.Spec.ClusterIPs...)
		}
		return nil
	case was == nil || !needsClusterIP(was):
		if isHeadless(svc) {
			return nil
		}
		for len(svc.Spec.ClusterIPs) < len(svc.Spec.IPFamilies) {
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, "")
		}
		for i, family := range svc.Spec.IPFamilies {
			if err := s.allocateIP(ctx, t, svc, i, family, dryRun); err != nil {
				return err
			}
		}
		return nil
	case isHeadless(was):
		return nil
	case len(was.Spec.IPFamilies) == 1 && len(svc.Spec.IPFamilies) == 2:
		if len(svc.Spec.ClusterIPs) < 2 {
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, "")
		}
		return s.allocateIP(ctx, t, svc, 1, svc.Spec.IPFamilies[1], dryRun)
	case len(was.Spec.IPFamilies) == 2 && len(svc.Spec.IPFamilies) == 1 && len(was.Spec.ClusterIPs) == 2:
		t.releaseIPs = append(t.releaseIPs, was.Spec.ClusterIPs[1])
	}
	return nil
}

// allocateIP reserves svc's i-th cluster IP (of family; requested or any).
func (s *Services) allocateIP(ctx context.Context, t *txn, svc *corev1.Service, i int, family corev1.IPFamily, dryRun bool) error {
	requested := svc.Spec.ClusterIPs[i]
	addr, err := s.ips.allocate(ctx, svc, family, requested, dryRun)
	switch {
	case err == nil:
	case requested == "" && errors.Is(err, ErrFull):
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name, err))
	case requested == "":
		return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(clusterIPsPath, svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP: %v", err))})
	default:
		return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(clusterIPsPath, svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: %v", requested, err))})
	}
	svc.Spec.ClusterIPs[i] = addr.String()
	if i == 0 {
		svc.Spec.ClusterIP = addr.String()
	}
	if !dryRun {
		t.ips = append(t.ips, addr.String())
		klog.FromContext(ctx).V(2).Info("Allocated a cluster IP", "service", klog.KObj(svc), "ip", addr)
	}
	return nil
}

// allocateNodePorts reserves the node ports (and health check node port) a new or
// updated Service needs, and marks those it gives up.
func (s *Services) allocateNodePorts(ctx context.Context, t *txn, svc, was *corev1.Service, dryRun bool) error {
	var had []int
	if was != nil {
		had = nodePortsOf(was)
	}
	now := map[int32]int32{} // service port → its node port, shared by its protocols
	if needsNodePorts(svc) {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 && !allocatesNodePorts(svc) {
				continue
			}
			if p.NodePort == 0 && now[p.Port] != 0 {
				p.NodePort = now[p.Port]
				continue
			}
			np, err := s.reservePort(ctx, t, svc, int(p.NodePort), had, dryRun)
			if err != nil {
				if p.NodePort == 0 {
					return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
				}
				return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(specPath.Child("ports").Index(i).Child("nodePort"), p.NodePort, err.Error())})
			}
			p.NodePort = int32(np) //nolint:gosec // a port number
			now[p.Port] = p.NodePort
		}
	}
	if needsHealthCheck(svc) && (was == nil || !needsHealthCheck(was)) {
		np, err := s.reservePort(ctx, t, svc, int(svc.Spec.HealthCheckNodePort), had, dryRun)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %d: %w", svc.Spec.HealthCheckNodePort, err))
		}
		svc.Spec.HealthCheckNodePort = int32(np) //nolint:gosec // a port number
	}
	keep := nodePortsOf(svc)
	for _, p := range had {
		if !slices.Contains(keep, p) {
			t.releasePorts = append(t.releasePorts, p)
		}
	}
	return nil
}

// reservePort reserves node port port (0: any) for svc, unless the Service holds it
// already (had) or this write reserved it.
func (s *Services) reservePort(ctx context.Context, t *txn, svc *corev1.Service, port int, had []int, dryRun bool) (int, error) {
	if port != 0 && (slices.Contains(had, port) || slices.Contains(t.ports, port)) {
		return port, nil
	}
	np, err := s.ports.allocate(ctx, svc, port, dryRun)
	if err != nil {
		return 0, err
	}
	if !dryRun {
		t.ports = append(t.ports, np)
	}
	return np, nil
}

// nodePortsOf returns the node ports svc holds (its ports' and its health check's),
// each once.
func nodePortsOf(svc *corev1.Service) []int {
	var out []int
	for _, p := range svc.Spec.Ports {
		// A Service whose type has none holds none, whatever its ports still say: an
		// update that changes its type loses them after the allocation (its strategy
		// clears them).
		if needsNodePorts(svc) && p.NodePort != 0 && !slices.Contains(out, int(p.NodePort)) {
			out = append(out, int(p.NodePort))
		}
	}
	if np := int(svc.Spec.HealthCheckNodePort); needsHealthCheck(svc) && np != 0 && !slices.Contains(out, np) {
		out = append(out, np)
	}
	return out
}

// allocatesNodePorts reports whether svc's ports get node ports they did not ask for:
// NodePort Services, and LoadBalancers unless allocateLoadBalancerNodePorts is false.
func allocatesNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// normalizeClusterIPs keeps clusterIP and clusterIPs in step, as Kubernetes does
// before it looks at them (was: the stored Service of an update, else nil).
func normalizeClusterIPs(svc, was *corev1.Service) {
	if was == nil {
		if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
		return
	}
	if len(was.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) == 0 && was.Spec.ClusterIP == svc.Spec.ClusterIP {
		svc.Spec.ClusterIPs = was.Spec.ClusterIPs
	}
	if was.Spec.ClusterIP != svc.Spec.ClusterIP && slices.Equal(was.Spec.ClusterIPs, svc.Spec.ClusterIPs) {
		if was.Spec.ClusterIP != "" && svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIPs = nil
		} else {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
	}
}

// patchAllocatedValues keeps what was allocated when an update leaves it out (a PUT
// of a manifest without clusterIP or nodePort), as Kubernetes does.
func patchAllocatedValues(svc, was *corev1.Service) {
	if needsClusterIP(was) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = was.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && len(was.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIPs = was.Spec.ClusterIPs
		}
	}
	if needsNodePorts(was) && needsNodePorts(svc) {
		inNew := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			inNew[p.NodePort] = true
		}
		byName := map[string]int32{}
		for _, p := range was.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			if p := &svc.Spec.Ports[i]; p.NodePort == 0 && !inNew[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if needsHealthCheck(was) && needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = was.Spec.HealthCheckNodePort
	}
}
