package service_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/service"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// servedV1 returns resources serving each of grs in v1 (only what NewFeature reads).
func servedV1(grs ...schema.GroupResource) []*registry.Resource {
	var out []*registry.Resource
	for _, gr := range grs {
		out = append(out, &registry.Resource{Group: gr.Group, StorageVersion: "v1",
			Versions: []registry.Version{{Name: "v1", Served: true}},
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: gr.Resource}})
	}
	return out
}

// TestNewFeature: the allocation runs only where Services, IPAddresses, ServiceCIDRs
// and EndpointSlices are all served in v1, and then has kube-apiserver's hooks in its
// order; a server without it has no allocation, no hooks, and starts nothing.
func TestNewFeature(t *testing.T) {
	reg := registry.New()
	cfg := service.FeatureConfig{
		Options:  service.NewOptions(),
		Endpoint: func() (netip.AddrPort, error) { return netip.MustParseAddrPort("127.0.0.1:6443"), nil },
		Server:   feature.Server{Informers: informers.New(reg, store.NewStore(nil)), Loopback: &rest.Config{Host: "https://127.0.0.1:1"}},
	}
	all := []schema.GroupResource{service.GroupResource, service.IPAddresses, service.ServiceCIDRs, service.EndpointSlices}

	cfg.Resources = servedV1(all...)
	f, err := service.NewFeature(cfg)
	if err != nil || f == nil || f.Services() == nil {
		t.Fatalf("NewFeature with every resource served: %v, %v", f, err)
	}
	var names []string
	for _, c := range f.Checks() {
		names = append(names, c.Name())
	}
	want := []string{health.PostStartHookPrefix + service.RepairHook, health.PostStartHookPrefix + service.BootstrapHook,
		health.PostStartHookPrefix + service.DefaultCIDRHook}
	if !slices.Equal(names, want) {
		t.Fatalf("Checks: %v, want %v", names, want)
	}

	// A server that does not allocate is not refused for want of an address to
	// advertise; one that does is.
	errNoAddress := errors.New("no address")
	cfg.Endpoint = func() (netip.AddrPort, error) { return netip.AddrPort{}, errNoAddress }
	if _, err := service.NewFeature(cfg); !errors.Is(err, errNoAddress) {
		t.Fatalf("NewFeature without an address to advertise: %v, want it refused", err)
	}
	cfg.Resources = servedV1(all[:3]...)
	f, err = service.NewFeature(cfg)
	if err != nil || f != nil {
		t.Fatalf("NewFeature without EndpointSlices: %v, %v; want nil, nil", f, err)
	}
	if f.Services() != nil || f.Checks() != nil || f.Start(t.Context(), nil) != nil {
		t.Fatal("a nil Feature has an allocation, checks, or starts something")
	}
}
