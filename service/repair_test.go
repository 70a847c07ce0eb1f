package service

import (
	"net/netip"
	"testing"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
)

// A Service's IPAddress that the repair's informer has not seen yet (the allocation
// writes it before the Service, through another watch) is not reported missing, nor
// written again, when the server has it.
func TestRepairAsksTheServerBeforeReportingAMissingAddress(t *testing.T) {
	reg := registry.New()
	var served []*registry.Resource
	for _, gr := range []struct{ group, resource string }{{"", "services"}, {"networking.k8s.io", "ipaddresses"},
		{"networking.k8s.io", "servicecidrs"}, {"discovery.k8s.io", "endpointslices"}} {
		served = append(served, &registry.Resource{Group: gr.group, StorageVersion: "v1",
			Versions: []registry.Version{{Name: "v1", Served: true}},
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: gr.resource}})
	}
	f, err := NewFeature(FeatureConfig{
		Options:   NewOptions(),
		Resources: served,
		Endpoint:  func() (netip.AddrPort, error) { return netip.MustParseAddrPort("127.0.0.1:6443"), nil },
		// Informers never started: their listers are empty, as one behind would be.
		Server: feature.Server{Informers: informers.New(reg, store.NewStore(nil)), Loopback: &rest.Config{Host: "https://127.0.0.1:1"}},
	})
	if err != nil || f == nil {
		t.Fatalf("NewFeature: %v, %v", f, err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.10", ClusterIPs: []string{"10.0.0.10"}}}
	client := fake.NewClientset(svc, ipAddressFor(svc, netip.MustParseAddr("10.0.0.10")))
	services := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Service{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := services.GetIndexer().Add(svc); err != nil {
		t.Fatal(err)
	}
	r := f.Services().NewRepair(RepairConfig{Services: services, Client: client})
	recorder := events.NewFakeRecorder(10)
	if err := r.repairService(t.Context(), recorder, "default", "web"); err != nil {
		t.Fatalf("repair: %v", err)
	}
	select {
	case e := <-recorder.Events:
		t.Errorf("the repair reported %q for an address the server has", e)
	default:
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" {
			t.Errorf("the repair wrote %s again", a.GetResource().Resource)
		}
	}
}
