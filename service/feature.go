package service

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// RepairHook names the repair controller's post-start hook, kube-apiserver's (its IP
// and node port repair controllers').
const RepairHook = "start-service-ip-repair-controllers"

// errInformersNotSynced: the informers of Services, IPAddresses, ServiceCIDRs and
// EndpointSlices have not read them yet.
var errInformersNotSynced = errors.New("the Services, IPAddresses, ServiceCIDRs and EndpointSlices have not been read yet")

// FeatureConfig is what Services' cluster IPs and node ports need of the server.
type FeatureConfig struct {
	// Server is the server's: its shared informers, of the resources below; its own
	// client, which the IPAddresses, ServiceCIDRs, Events and the kubernetes Service
	// are written with; its ID, which names it in the repair controller's election;
	// its ReconcileMetrics, which receive the controllers' samples.
	feature.Server
	// Resources are the server's built-in resources, before they are registered: the
	// allocation needs Services, IPAddresses, ServiceCIDRs and EndpointSlices in v1.
	Resources []*registry.Resource
	// Options are the --service-* flags.
	Options
	// Raw holds the node port records.
	Raw *storage.Store
	// Endpoint returns where this server serves (its advertised address and port),
	// Leases is the informer of the servers' identity leases (nil without them; its
	// owner starts it): the kubernetes Service's endpoints. Endpoint is called only
	// when the server allocates: one that does not is not refused for want of an
	// address to advertise.
	Endpoint func() (netip.AddrPort, error)
	Leases   cache.SharedIndexInformer
}

// Feature is Services' cluster IPs and node ports as one server runs them: the
// allocation in the store's writes, the default ServiceCIDR controller, the repair
// controller (elected among the servers) and the bootstrap controller of the
// kubernetes Service.
type Feature struct {
	cfg      FeatureConfig
	endpoint netip.AddrPort
	ranges   []netip.Prefix
	client   kubernetes.Interface
	alloc    *Services
	// cidrs, addresses, services and slices are the informers the controllers read.
	cidrs, addresses, services, slices cache.SharedIndexInformer
	// repairHook, bootstrapHook and cidrHook are the post-start hooks, in
	// kube-apiserver's order.
	repairHook, bootstrapHook, cidrHook *health.PostStartHook
}

// NewFeature builds the allocation, before the resources are registered (the
// services resource is configured with it, see Services). It returns nil, nil when
// the resources do not serve all of Services, IPAddresses, ServiceCIDRs and
// EndpointSlices in v1: Services are data then, without cluster IPs.
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	for _, gr := range []schema.GroupResource{GroupResource, IPAddresses, ServiceCIDRs, EndpointSlices} {
		if !registry.Serves(cfg.Resources, gr, "v1") {
			klog.Background().V(2).Info("Services are served without cluster IPs: a resource the allocation needs is not served in v1", "resource", gr)
			return nil, nil
		}
	}
	endpoint, err := cfg.Endpoint()
	if err != nil {
		return nil, err
	}
	ranges, err := ParseClusterIPRanges(cfg.ClusterIPRange)
	if err != nil {
		return nil, err
	}
	ports, err := ParseNodePortRange(cfg.NodePortRange)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg.LoopbackConfig())
	if err != nil {
		return nil, err
	}
	f := &Feature{cfg: cfg, endpoint: endpoint, ranges: ranges, client: client,
		cidrs:      cfg.Informers.Typed(ServiceCIDRs, func() runtime.Object { return &networkingv1.ServiceCIDR{} }),
		addresses:  cfg.Informers.Typed(IPAddresses, func() runtime.Object { return &networkingv1.IPAddress{} }),
		services:   cfg.Informers.Typed(GroupResource, func() runtime.Object { return &corev1.Service{} }),
		slices:     cfg.Informers.Typed(EndpointSlices, func() runtime.Object { return &discoveryv1.EndpointSlice{} }),
		repairHook: health.NewPostStartHook(RepairHook), bootstrapHook: health.NewPostStartHook(BootstrapHook),
		cidrHook: health.NewPostStartHook(DefaultCIDRHook),
	}
	f.alloc = New(Config{ClusterIPRanges: ranges, NodePorts: ports, Raw: cfg.Raw, Client: client.NetworkingV1(),
		ServiceCIDRs: f.cidrs, IPAddresses: f.addresses})
	return f, nil
}

// Services is the allocation, which package builtin gives the services resource
// (Services.Configure) and the cluster proxy reads the primary IP family of; nil on a
// nil Feature, a server that does not allocate.
func (f *Feature) Services() *Services {
	if f == nil {
		return nil
	}
	return f.alloc
}

// Checks are the post-start hooks of the repair controller, the kubernetes Service
// and the default ServiceCIDR, in kube-apiserver's order; none on a nil Feature.
func (f *Feature) Checks() []health.Checker {
	if f == nil {
		return nil
	}
	return []health.Checker{f.repairHook, f.bootstrapHook, f.cidrHook}
}

// Start starts, in g, the informers the allocation and the controllers read, the
// default ServiceCIDR controller, the repair controller (elected among the servers),
// and the bootstrap controller of the kubernetes Service, ready once that Service and
// its endpoints, and the default ServiceCIDR, are written. A nil Feature starts
// nothing.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	if f == nil {
		return nil
	}
	if err := f.cfg.Informers.Start(ctx, g, "service-informers", errInformersNotSynced, f.cidrs, f.services, f.slices, f.addresses); err != nil {
		return err
	}
	cidrCtrl, err := NewDefaultCIDRController(f.ranges, f.cidrs, f.client.NetworkingV1(), f.cfg.ReconcileMetrics)
	if err != nil {
		return err
	}
	// Not waited for here: the kubernetes Service needs no ServiceCIDR object (the
	// allocator knows the flag's range), and is waited for with it below.
	if err := g.Start(ctx, lifecycle.Component{Name: "default-servicecidr", Run: cidrCtrl.Run}); err != nil {
		return err
	}
	if err := f.startRepair(ctx, g); err != nil {
		return err
	}
	k, err := f.alloc.NewKubernetesService(KubernetesConfig{
		Endpoint: f.endpoint, Leases: f.cfg.Leases, Services: f.services, EndpointSlices: f.slices,
		Client: f.client, Metrics: f.cfg.ReconcileMetrics,
	})
	if err != nil {
		return err
	}
	ready := func() error { return errors.Join(cidrCtrl.Ready(), k.Ready()) }
	if err := g.Start(ctx, lifecycle.Component{Name: "kubernetes-service", Run: k.Run, Ready: ready}); err != nil {
		return fmt.Errorf("creating the default ServiceCIDR and the kubernetes Service: %w", err)
	}
	f.cidrHook.Done()
	f.bootstrapHook.Done()
	return nil
}

// startRepair starts the repair controller, elected among the servers.
func (f *Feature) startRepair(ctx context.Context, g *lifecycle.Group) error {
	repair := f.alloc.NewRepair(RepairConfig{
		Services: f.services, Client: f.client, Grace: f.cfg.RepairGrace, Metrics: f.cfg.ReconcileMetrics,
	})
	run := reconcile.Elected(f.cfg.Election, "service-ip-repair", repair.Run)
	if err := g.Start(ctx, lifecycle.Component{Name: "service-ip-repair", Run: run}); err != nil {
		return fmt.Errorf("starting the Service IP repair controller: %w", err)
	}
	f.repairHook.Done()
	return nil
}
