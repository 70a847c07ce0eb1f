package kubesemantics

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/apis/discovery"
	discoveryvalidation "k8s.io/kubernetes/pkg/apis/discovery/validation"
	"k8s.io/utils/ptr"
)

const endpointSliceManifest = `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: default, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints:
- addresses: [10.0.0.5]
  nodeName: node-1
ports: [{name: http, port: 80}]
`

func TestEndpointSlices(t *testing.T) {
	g := rigCatalog(t, nil, "discovery.k8s.io", "endpointslices")
	s, errs, warnings := g.create("v1", endpointSliceManifest)
	rigWantErrs(t, "valid", errs)
	rigWantWarnings(t, "valid", warnings)
	rigWant(t, s, "metadata.generation", 1)
	rigWant(t, s, "ports", []any{map[string]any{"name": "http", "port": int64(80), "protocol": "TCP"}}) // kube's default

	_, errs, _ = g.create("v1", `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: default}
addressType: IPv4
endpoints: [{addresses: [not-an-ip]}]
ports: [{name: "Not_A_Name", port: 80}]
`)
	rigWantErrs(t, "invalid", errs, "endpoints[0].addresses[0]: Invalid value", "ports[0].name: Invalid value")

	// Loopback addresses are Concord's exception; the other special ranges stay refused.
	_, errs, _ = g.create("v1", `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: default}
addressType: IPv4
endpoints: [{addresses: [127.0.0.1]}, {addresses: [169.254.0.1]}, {addresses: [0.0.0.0]}]
`)
	rigWantErrs(t, "special addresses", errs, "endpoints[1].addresses[0]: Invalid value", "endpoints[2].addresses[0]: Invalid value")

	_, errs, warnings = g.create("v1", `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: default}
addressType: FQDN
endpoints: [{addresses: [web.example.com]}]
`)
	rigWantErrs(t, "FQDN", errs)
	rigWantWarnings(t, "FQDN", warnings, "addressType: FQDN endpoints are deprecated")

	stored := g.mustCreate("v1", endpointSliceManifest)
	up, errs, _ := g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "metadata.labels.extra", "x") })
	rigWantErrs(t, "labels", errs)
	rigWant(t, up, "metadata.generation", 2) // labels count
	up, _, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "metadata.annotations", map[string]any{"a": "b"}) })
	rigWant(t, up, "metadata.generation", 1)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { o["addressType"] = "IPv6" })
	rigWantErrs(t, "address type change", errs, "addressType: Invalid value")
}

// TestEndpointSliceV1beta1Topology: a write in v1 drops the deprecated topology
// that only v1beta1 shows, keeping a host the stored slice named as nodeName; a
// write in v1beta1 keeps it.
func TestEndpointSliceV1beta1Topology(t *testing.T) {
	host := map[string]string{"kubernetes.io/hostname": "node-1"}
	old := &discovery.EndpointSlice{Endpoints: []discovery.Endpoint{{Addresses: []string{"10.0.0.5"}, DeprecatedTopology: host}}}
	at := func(version string) *request.RequestInfo {
		return &request.RequestInfo{APIGroup: "discovery.k8s.io", APIVersion: version}
	}
	for _, c := range []struct {
		version        string
		old            *discovery.EndpointSlice
		topology, node bool
	}{
		{"v1beta1", old, true, false},
		{"v1", old, false, true},
		{"v1", nil, false, false}, // a host no stored slice named is not taken
	} {
		s := &discovery.EndpointSlice{Endpoints: []discovery.Endpoint{{Addresses: []string{"10.0.0.6"}, DeprecatedTopology: host}}}
		dropDeprecatedTopology(request.WithRequestInfo(t.Context(), at(c.version)), s, c.old)
		ep := s.Endpoints[0]
		if (ep.DeprecatedTopology != nil) != c.topology || (ep.NodeName != nil) != c.node {
			t.Errorf("%s, stored %v: topology %v, nodeName %v; want topology %v, nodeName %v", c.version, c.old != nil, ep.DeprecatedTopology, ep.NodeName, c.topology, c.node)
		}
	}
	// Endpoints unchanged: left as they are.
	same := old.DeepCopy()
	dropDeprecatedTopology(request.WithRequestInfo(t.Context(), at("v1")), same, old)
	if same.Endpoints[0].DeprecatedTopology == nil {
		t.Error("an update that leaves the endpoints as they are dropped their topology")
	}
}

func TestEndpointSliceNodeHints(t *testing.T) {
	withHints := func() *discovery.EndpointSlice {
		return &discovery.EndpointSlice{Endpoints: []discovery.Endpoint{{Hints: &discovery.EndpointHints{ForNodes: []discovery.ForNode{{Name: "n"}}}}}}
	}
	// PreferSameTrafficDistribution is off by default at 1.33, locked on at 1.37.
	off, err := NewGates(version.MustParse("1.33"), version.MustParse("1.32"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := withHints()
	off.Do(func() { dropNodeHints(s, nil) })
	if s.Endpoints[0].Hints.ForNodes != nil {
		t.Error("node hints kept with PreferSameTrafficDistribution off")
	}
	s = withHints()
	off.Do(func() { dropNodeHints(s, withHints()) })
	if s.Endpoints[0].Hints.ForNodes == nil {
		t.Error("node hints the stored slice has dropped")
	}
	s = withHints()
	rigGates(t, nil).Do(func() { dropNodeHints(s, nil) })
	if s.Endpoints[0].Hints.ForNodes == nil {
		t.Error("node hints dropped with PreferSameTrafficDistribution on")
	}
}

func TestEndpointSliceWarningsAndGeneration(t *testing.T) {
	s := &discovery.EndpointSlice{Endpoints: []discovery.Endpoint{{Addresses: []string{"::ffff:10.0.0.1"}}}}
	if got := endpointAddressWarnings(s); len(got) != 1 {
		t.Errorf("IPv4-mapped address: warnings %q, want one", got)
	}
	s.Labels = map[string]string{"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
	if got := endpointAddressWarnings(s); len(got) != 0 {
		t.Errorf("the controller's slice: warnings %q, want none", got)
	}

	old := &discovery.EndpointSlice{AddressType: discovery.AddressTypeIPv4}
	s = old.DeepCopy()
	s.Annotations = map[string]string{"a": "b"}
	s.Endpoints = []discovery.Endpoint{{Addresses: []string{"10.0.0.1"}, Zone: ptr.To("z")}}
	if !endpointSliceChanged(s, old) {
		t.Error("new endpoints: unchanged")
	}
	s.Endpoints = nil
	if endpointSliceChanged(s, old) {
		t.Error("annotations alone: changed")
	}
}

// TestAllowLoopback: only kube's loopback refusal is dropped, for IPv4 and IPv6.
func TestAllowLoopback(t *testing.T) {
	s := &discovery.EndpointSlice{AddressType: discovery.AddressTypeIPv6, Endpoints: []discovery.Endpoint{{Addresses: []string{"::1", "fe80::1"}}}}
	s.Name, s.Namespace = "s", "default"
	errs := discoveryvalidation.ValidateEndpointSliceCreate(s)
	if len(errs) != 2 {
		t.Fatalf("kube's validation: %v, want two errors", errs)
	}
	rigWantErrs(t, "IPv6", allowLoopback(s, errs), "endpoints[0].addresses[1]: Invalid value")
}
