package service

import (
	"github.com/concordproject/concord/registry"
)

// ConfigureIPAddresses gives networking.k8s.io IPAddresses their table cells; their
// validation is Kubernetes' own (package kubesemantics).
func ConfigureIPAddresses(res *registry.Resource) error {
	if res.HasPrinterColumns(ipAddressColumns) {
		res.Hooks = &registry.Hooks{TableCells: ipAddressCells}
	}
	return nil
}

// ConfigureServiceCIDRs gives networking.k8s.io ServiceCIDRs their table cells; their
// validation is Kubernetes' own (package kubesemantics).
func ConfigureServiceCIDRs(res *registry.Resource) error {
	if res.HasPrinterColumns(serviceCIDRColumns) {
		res.Hooks = &registry.Hooks{TableCells: serviceCIDRCells}
	}
	return nil
}
