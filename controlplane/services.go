package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"

	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/service"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// errServiceInformersNotSynced: the informers of Services, IPAddresses, ServiceCIDRs
// and EndpointSlices have not read them yet.
var errServiceInformersNotSynced = errors.New("the Services, IPAddresses, ServiceCIDRs and EndpointSlices have not been read yet")

// repairLease is the lease of the Service IP repair controller's election.
const repairLease = "concord-service-ip-repair"

// servesServices reports whether the server allocates Services' cluster IPs.
func (i *Instance) servesServices() bool { return i.parts.services != nil }

// newServices builds the allocation of Services' cluster IPs and node ports when the
// server serves Services, IPAddresses and ServiceCIDRs in v1 (resources is the
// server's built-in resources, before they go into the registry); else nil: Services
// are data then.
func (i *Instance) newServices(resources []*registry.Resource) (*service.Services, error) {
	for _, gr := range []schema.GroupResource{service.GroupResource, service.IPAddresses, service.ServiceCIDRs, service.EndpointSlices} {
		if !servedIn(resources, gr, "v1") {
			klog.Background().V(2).Info("Services are served without cluster IPs: a resource the allocation needs is not served in v1", "resource", gr)
			return nil, nil
		}
	}
	ranges, err := service.ParseClusterIPRanges(i.opts.Services.ClusterIPRange)
	if err != nil {
		return nil, err
	}
	ports, err := service.ParseNodePortRange(i.opts.Services.NodePortRange)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(i.unlimitedLoopback())
	if err != nil {
		return nil, err
	}
	svcs := service.New(service.Config{
		ClusterIPRanges: ranges, NodePorts: ports, Raw: i.raw, Client: client.NetworkingV1(),
		ServiceCIDRs: i.parts.informers.Typed(service.ServiceCIDRs, func() runtime.Object { return &networkingv1.ServiceCIDR{} }),
		IPAddresses:  i.parts.informers.Typed(service.IPAddresses, func() runtime.Object { return &networkingv1.IPAddress{} }),
	})
	i.parts.services = svcs
	return svcs, nil
}

// servedIn reports whether resources hold gr with version served.
func servedIn(resources []*registry.Resource, gr schema.GroupResource, version string) bool {
	for _, r := range resources {
		if r.GroupResource() == gr {
			return r.ServedVersion(version) != nil
		}
	}
	return false
}

// startServices starts what Services' cluster IPs need: the informers the allocation
// reads, the default ServiceCIDR controller (ready once it exists), the repair
// controller (elected among the servers), and the bootstrap controller of the
// kubernetes Service (ready once the Service and its endpoints are written).
func (i *Instance) startServices(ctx context.Context) error {
	svcs := i.parts.services
	if svcs == nil {
		return nil
	}
	client, err := kubernetes.NewForConfig(i.unlimitedLoopback())
	if err != nil {
		return err
	}
	cidrs := i.parts.informers.Typed(service.ServiceCIDRs, func() runtime.Object { return &networkingv1.ServiceCIDR{} })
	services := i.parts.informers.Typed(service.GroupResource, func() runtime.Object { return &corev1.Service{} })
	slices := i.parts.informers.Typed(service.EndpointSlices, func() runtime.Object { return &discoveryv1.EndpointSlice{} })
	addresses := i.parts.informers.Typed(service.IPAddresses, func() runtime.Object { return &networkingv1.IPAddress{} })
	if err := i.parts.informers.Start(ctx, &i.components, "service-informers", errServiceInformersNotSynced, cidrs, services, slices, addresses); err != nil {
		return err
	}
	ranges, _ := service.ParseClusterIPRanges(i.opts.Services.ClusterIPRange)
	cidrCtrl, err := service.NewDefaultCIDRController(ranges, cidrs, client.NetworkingV1(), i.runtime)
	if err != nil {
		return err
	}
	// Not waited for here: the kubernetes Service needs no ServiceCIDR object (the
	// allocator knows the flag's range), and is waited for with it below.
	if err := i.start(ctx, lifecycle.Component{Name: "default-servicecidr", Run: cidrCtrl.Run}); err != nil {
		return err
	}
	if err := i.startRepair(ctx, client, svcs.NewRepair(service.RepairConfig{
		Services: services, Client: client, Grace: i.opts.Services.RepairGrace, Metrics: i.runtime,
	})); err != nil {
		return err
	}
	endpoint, err := i.endpoint()
	if err != nil {
		return err
	}
	k, err := svcs.NewKubernetesService(service.KubernetesConfig{
		Endpoint: endpoint, Leases: i.parts.identity.Leases(), Services: services, EndpointSlices: slices,
		Client: client, Metrics: i.runtime,
	})
	if err != nil {
		return err
	}
	ready := func() error { return errors.Join(cidrCtrl.Ready(), k.Ready()) }
	if err := i.start(ctx, lifecycle.Component{Name: "kubernetes-service", Run: k.Run, Ready: ready}); err != nil {
		return fmt.Errorf("creating the default ServiceCIDR and the kubernetes Service: %w", err)
	}
	i.finish(service.DefaultCIDRHook)
	i.finish(service.BootstrapHook)
	return nil
}

// startRepair starts the repair controller, elected among the servers.
func (i *Instance) startRepair(ctx context.Context, client kubernetes.Interface, repair *service.Repair) error {
	run := reconcile.Elected(client.CoordinationV1(), repairLease, i.ServerID+"_"+uuid.NewString(), repair.Run)
	if err := i.start(ctx, lifecycle.Component{Name: "service-ip-repair", Run: run}); err != nil {
		return fmt.Errorf("starting the Service IP repair controller: %w", err)
	}
	i.finish(hookServiceIPRepair)
	return nil
}

// endpoint returns where the server serves, for the cluster: --advertise-address
// (else --bind-address, else the host's default interface) and the port it listens
// on.
func (i *Instance) endpoint() (netip.AddrPort, error) {
	u, err := url.Parse(i.URL)
	if err != nil {
		return netip.AddrPort{}, err
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("the server's port %q: %w", u.Port(), err)
	}
	addr := i.opts.AdvertiseAddress
	if addr == "" {
		addr = i.opts.BindAddress
	}
	if ip := net.ParseIP(addr); ip == nil || ip.IsUnspecified() {
		host, err := utilnet.ChooseHostInterface()
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("choosing the address to advertise (set --advertise-address): %w", err)
		}
		addr = host.String()
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}
