package controlplane

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/service"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// newServices builds the Services feature, whose allocation of cluster IPs and node
// ports builtin.Configure gives the services resource (resources is the server's
// built-in resources, before they go into the registry); nil when the server does not
// allocate them.
func (i *Instance) newServices(resources []*registry.Resource) (*service.Feature, error) {
	// Only a server that allocates them needs its advertised address here (for the
	// kubernetes Service): one that does not is not refused for the want of it.
	endpoint, endpointErr := i.endpoint()
	f, err := service.NewFeature(service.FeatureConfig{
		Resources: resources, ClusterIPRange: i.opts.Services.ClusterIPRange, NodePortRange: i.opts.Services.NodePortRange,
		RepairGrace: i.opts.Services.RepairGrace, Raw: i.raw, Informers: i.parts.informers, Loopback: i.unlimitedLoopback(),
		Endpoint: endpoint, Leases: i.parts.identity.Leases(), ServerID: i.ServerID, ReconcileMetrics: i.runtime,
	})
	if err != nil || f == nil {
		return nil, err
	}
	return f, endpointErr
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
