package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/reconcile"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoveryv1listers "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// The kubernetes Service.
const (
	// KubernetesName is the name of the Service of the servers themselves, in
	// KubernetesNamespace.
	KubernetesName      = "kubernetes"
	KubernetesNamespace = metav1.NamespaceDefault
	// KubernetesPortName names its port and its endpoints' ports.
	KubernetesPortName = "https"
	// KubernetesPort is its port.
	KubernetesPort = 443
	// BootstrapHook names the bootstrap controller's post-start hook, kube-apiserver's.
	BootstrapHook = "bootstrap-controller"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by label of the
	// EndpointSlices the bootstrap controller keeps.
	ManagedBy = "bootstrap-controller.concord.io"
)

// kubernetesInterval is how often the kubernetes Service and its endpoints are
// checked again besides their changes (kube-apiserver's endpoint reconciler's).
const kubernetesInterval = 10 * time.Second

// errKubernetesNotSynced: the kubernetes Service has not been created yet.
var errKubernetesNotSynced = errors.New("the kubernetes Service has not been created yet")

// The keys of the bootstrap controller.
const (
	keyService   = "service"
	keyEndpoints = "endpoints"
)

// KubernetesConfig is what the bootstrap controller needs.
type KubernetesConfig struct {
	// Endpoint is where this server serves (its advertise address and port).
	Endpoint netip.AddrPort
	// Leases is an informer of the identity leases (unstructured), whose
	// identity.AnnotationEndpoint name where every server serves; nil without identity
	// leases: then the endpoints keep whoever they name, and gain this server.
	Leases cache.SharedIndexInformer
	// Services and EndpointSlices are informers of typed objects its owner runs.
	Services, EndpointSlices cache.SharedIndexInformer
	// Client writes the Service and its EndpointSlices (through the server's API).
	Client kubernetes.Interface
	// Metrics receives the controller's samples.
	Metrics *reconcile.Metrics
}

// KubernetesService is the bootstrap controller of default/kubernetes, as
// kube-apiserver's: the Service (ClusterIP the first address of the primary range,
// port 443 "https" to the target port named "https") is created when missing and its
// ports and type kept; its EndpointSlices name the live servers, one slice per address
// type and port the servers listen on, the port named "https". Every server runs one;
// they compute the same from the same leases.
type KubernetesService struct {
	s      *Services
	cfg    KubernetesConfig
	ctrl   *reconcile.Controller[string]
	svcs   corev1listers.ServiceLister
	slices discoveryv1listers.EndpointSliceLister
	synced atomic.Bool
}

// NewKubernetesService returns the bootstrap controller.
func (s *Services) NewKubernetesService(cfg KubernetesConfig) (*KubernetesService, error) {
	k := &KubernetesService{s: s, cfg: cfg,
		svcs:   corev1listers.NewServiceLister(cfg.Services.GetIndexer()),
		slices: discoveryv1listers.NewEndpointSliceLister(cfg.EndpointSlices.GetIndexer())}
	k.ctrl = reconcile.New("kubernetes-service", reconcile.Func[string](k.reconcile), reconcile.Options[string]{Metrics: cfg.Metrics})
	ours := func(ns, name string) bool { return ns == KubernetesNamespace && name == KubernetesName }
	if err := reconcile.WatchOf(k.ctrl, cfg.Services, func(svc *corev1.Service) []string {
		if ours(svc.Namespace, svc.Name) {
			return []string{keyService, keyEndpoints}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := reconcile.WatchOf(k.ctrl, cfg.EndpointSlices, func(s *discoveryv1.EndpointSlice) []string {
		if ours(s.Namespace, s.Labels[discoveryv1.LabelServiceName]) {
			return []string{keyEndpoints}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if cfg.Leases != nil {
		if err := k.ctrl.Watch(cfg.Leases, func(*unstructured.Unstructured) []string { return []string{keyEndpoints} }); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// Ready reports nil once the Service and its endpoints have been written once.
func (k *KubernetesService) Ready() error {
	if !k.synced.Load() {
		return errKubernetesNotSynced
	}
	return nil
}

// Run creates the Service and its endpoints, then keeps them until ctx is done.
func (k *KubernetesService) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("kubernetes-service"))
	if !k.ctrl.WaitForSync(ctx) {
		return nil
	}
	k.ctrl.Add(keyService)
	k.ctrl.Add(keyEndpoints)
	k.ctrl.Drain(ctx)
	k.synced.Store(true)
	return k.ctrl.Run(ctx)
}

func (k *KubernetesService) reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	var err error
	if key == keyService {
		err = k.reconcileService(ctx)
	} else {
		err = k.reconcileEndpoints(ctx)
	}
	return reconcile.Result{RequeueAfter: kubernetesInterval}, err
}

// desiredService is the kubernetes Service.
func (k *KubernetesService) desiredService() *corev1.Service {
	first, _ := usable(k.s.cfg.ClusterIPRanges[0])
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: KubernetesName, Namespace: KubernetesNamespace,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: first.String(), ClusterIPs: []string{first.String()},
			Ports: []corev1.ServicePort{{Name: KubernetesPortName, Protocol: corev1.ProtocolTCP, Port: KubernetesPort,
				TargetPort: intstr.FromString(KubernetesPortName)}},
			SessionAffinity: corev1.ServiceAffinityNone,
		},
	}
}

// reconcileService creates the Service if it is missing, and puts its ports and type
// back if they changed.
func (k *KubernetesService) reconcileService(ctx context.Context) error {
	want := k.desiredService()
	cur, err := k.svcs.Services(KubernetesNamespace).Get(KubernetesName)
	if apierrors.IsNotFound(err) {
		_, err := k.cfg.Client.CoreV1().Services(KubernetesNamespace).Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			klog.FromContext(ctx).Info("Created the kubernetes Service", "clusterIP", want.Spec.ClusterIP)
		}
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if cur.Spec.Type == want.Spec.Type && len(cur.Spec.Ports) == 1 && samePort(cur.Spec.Ports[0], want.Spec.Ports[0]) {
		return nil
	}
	next := cur.DeepCopy()
	next.Spec.Type, next.Spec.Ports = want.Spec.Type, want.Spec.Ports
	_, err = k.cfg.Client.CoreV1().Services(KubernetesNamespace).Update(ctx, next, metav1.UpdateOptions{})
	return err
}

func samePort(a, b corev1.ServicePort) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.Port == b.Port && a.TargetPort == b.TargetPort
}

// reconcileEndpoints writes the EndpointSlices the live servers call for and removes
// the others this controller wrote.
func (k *KubernetesService) reconcileEndpoints(ctx context.Context) error {
	existing, err := k.slices.EndpointSlices(KubernetesNamespace).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: KubernetesName, discoveryv1.LabelManagedBy: ManagedBy}))
	if err != nil {
		return err
	}
	want := desiredSlices(k.endpoints(existing))
	client := k.cfg.Client.DiscoveryV1().EndpointSlices(KubernetesNamespace)
	for _, s := range want {
		cur, err := k.slices.EndpointSlices(KubernetesNamespace).Get(s.Name)
		switch {
		case apierrors.IsNotFound(err):
			if _, err := client.Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		case err != nil:
			return err
		case cur.AddressType != s.AddressType:
			if err := client.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			return fmt.Errorf("replacing EndpointSlice %s of another address type", cur.Name) // retried: created then
		case !apiequality.Semantic.DeepEqual(cur.Endpoints, s.Endpoints) || !apiequality.Semantic.DeepEqual(cur.Ports, s.Ports) ||
			cur.Labels[discoveryv1.LabelServiceName] != KubernetesName:
			next := cur.DeepCopy()
			next.Labels, next.Endpoints, next.Ports = s.Labels, s.Endpoints, s.Ports
			if _, err := client.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
	}
	for _, cur := range existing {
		if !slices.ContainsFunc(want, func(s *discoveryv1.EndpointSlice) bool { return s.Name == cur.Name }) {
			err := client.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	return nil
}

// endpoints returns where the live servers serve: from the identity leases (a
// server's goes when it stops, or, once it has expired, when the elected collector
// removes it: every server then sees the same, whatever its clock), or, without them,
// what the slices name and this server.
func (k *KubernetesService) endpoints(existing []*discoveryv1.EndpointSlice) []netip.AddrPort {
	out := []netip.AddrPort{k.cfg.Endpoint}
	add := func(ap netip.AddrPort) {
		if ap.IsValid() && !slices.Contains(out, ap) {
			out = append(out, ap)
		}
	}
	if k.cfg.Leases == nil {
		for _, s := range existing {
			for _, p := range s.Ports {
				for _, e := range s.Endpoints {
					for _, a := range e.Addresses {
						if addr, err := netip.ParseAddr(a); err == nil && p.Port != nil {
							add(netip.AddrPortFrom(addr, uint16(*p.Port))) //nolint:gosec // a port number
						}
					}
				}
			}
		}
		return out
	}
	for _, obj := range k.cfg.Leases.GetStore().List() {
		lease, ok := obj.(*unstructured.Unstructured)
		if !ok || !identity.IsIdentityLease(lease) {
			continue
		}
		if ap, err := netip.ParseAddrPort(lease.GetAnnotations()[identity.AnnotationEndpoint]); err == nil {
			add(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		}
	}
	return out
}

// desiredSlices groups endpoints by address type and port into EndpointSlices: the
// first group (by address type, then port) is "kubernetes", the others
// "kubernetes-<type>-<port>".
func desiredSlices(endpoints []netip.AddrPort) []*discoveryv1.EndpointSlice {
	type group struct {
		addressType discoveryv1.AddressType
		port        uint16
	}
	byGroup := map[group][]string{}
	for _, ap := range endpoints {
		g := group{discoveryv1.AddressTypeIPv4, ap.Port()}
		if ap.Addr().Is6() {
			g.addressType = discoveryv1.AddressTypeIPv6
		}
		byGroup[g] = append(byGroup[g], ap.Addr().String())
	}
	groups := make([]group, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(x, y group) int {
		return cmp.Or(cmp.Compare(x.addressType, y.addressType), cmp.Compare(x.port, y.port))
	})
	out := make([]*discoveryv1.EndpointSlice, 0, len(groups))
	for i, g := range groups {
		name := KubernetesName
		if i > 0 {
			name = fmt.Sprintf("%s-%s-%d", KubernetesName, strings.ToLower(string(g.addressType)), g.port)
		}
		addrs := byGroup[g]
		slices.Sort(addrs)
		s := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: KubernetesNamespace, Labels: map[string]string{
				discoveryv1.LabelServiceName: KubernetesName, discoveryv1.LabelManagedBy: ManagedBy}},
			AddressType: g.addressType,
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To(KubernetesPortName), Protocol: ptr.To(corev1.ProtocolTCP),
				Port: ptr.To(int32(g.port))}},
		}
		for _, a := range addrs {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		}
		out = append(out, s)
	}
	return out
}
