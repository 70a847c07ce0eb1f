package kubesemantics

import (
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/registry"

	"k8s.io/kubernetes/pkg/apis/networking"
	"k8s.io/utils/ptr"
)

const ingressManifest = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default}
spec:
  ingressClassName: nginx
  rules:
  - host: example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: web, port: {number: 80}}}
status:
  loadBalancer: {ingress: [{ip: 10.0.0.1}]}
`

func TestIngresses(t *testing.T) {
	g := rigCatalog(t, nil, "networking.k8s.io", "ingresses")
	in, errs, warnings := g.create("v1", ingressManifest)
	rigWantErrs(t, "valid", errs)
	rigWantWarnings(t, "valid", warnings)
	rigWant(t, in, "status", map[string]any{"loadBalancer": map[string]any{}})
	rigWant(t, in, "metadata.generation", 1)

	_, errs, _ = g.create("v1", `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default}
spec: {rules: [{http: {paths: [{path: /, backend: {service: {name: web, port: {number: 80}}}}]}}]}
`)
	rigWantErrs(t, "no pathType", errs, "spec.rules[0].http.paths[0].pathType: Required value")
	_, errs, _ = g.create("v1", `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default}
spec: {rules: [{host: "*", http: {paths: [{path: relative, pathType: Prefix, backend: {service: {name: web}}}]}}]}
`)
	rigWantErrs(t, "invalid", errs,
		"spec.rules[0].host: Invalid value",
		"spec.rules[0].http.paths[0].path: Invalid value",
		"spec.rules[0].http.paths[0].backend: Required value")

	_, _, warnings = g.create("v1", `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default, annotations: {kubernetes.io/ingress.class: nginx}}
spec: {defaultBackend: {service: {name: web, port: {number: 80}}}}
`)
	rigWantWarnings(t, "class annotation", warnings, `annotation "kubernetes.io/ingress.class" is deprecated`)

	stored := g.mustCreate("v1", ingressManifest)
	up, errs, _ := g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.ingressClassName", "other") })
	rigWantErrs(t, "spec update", errs)
	rigWant(t, up, "metadata.generation", 2)
	up, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "metadata.labels", map[string]any{"a": "b"}) })
	rigWantErrs(t, "labels update", errs)
	rigWant(t, up, "metadata.generation", 1)

	up, errs, _ = g.update("v1", "status", stored, func(o map[string]any) {
		rigSet(o, "spec.ingressClassName", "ignored")
		rigSet(o, "status.loadBalancer.ingress", []any{map[string]any{"ip": "10.0.0.2"}})
	})
	rigWantErrs(t, "status update", errs)
	rigWant(t, up, "spec.ingressClassName", "nginx")
	rigWant(t, up, "status.loadBalancer.ingress", []any{map[string]any{"ip": "10.0.0.2"}})
	_, errs, _ = g.update("v1", "status", stored, func(o map[string]any) {
		rigSet(o, "status.loadBalancer.ingress", []any{map[string]any{"ip": "not-an-ip"}})
	})
	rigWantErrs(t, "invalid status", errs, "status.loadBalancer.ingress[0].ip: Invalid value")
}

func TestIngressWarnings(t *testing.T) {
	in := &networking.Ingress{}
	in.Annotations = map[string]string{legacyIngressClassAnnotation: "nginx"}
	if got := ingressClassWarnings(in); len(got) != 1 {
		t.Errorf("annotation alone: %q, want one warning", got)
	}
	in.Spec.IngressClassName = ptr.To("nginx")
	if got := ingressClassWarnings(in); len(got) != 0 {
		t.Errorf("annotation and class name: %q, want none", got)
	}
	in.Status.LoadBalancer.Ingress = []networking.IngressLoadBalancerIngress{{Hostname: "lb"}, {IP: "::ffff:1.2.3.4"}}
	got := loadBalancerIPWarnings(in)
	if len(got) != 1 || got[0][:len("status.loadBalancer.ingress[1]")] != "status.loadBalancer.ingress[1]" {
		t.Errorf("IPv4-mapped IPv6 address: %q, want one warning at status.loadBalancer.ingress[1]", got)
	}
}

func TestIngressClasses(t *testing.T) {
	g := rigHand(t, nil, "networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, false)
	const manifest = `
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec:
  controller: example.com/ingress
  parameters: {apiGroup: k8s.example.com, kind: Params, name: p}
`
	c, errs, _ := g.create("v1", manifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, c, "metadata.generation", 1)
	rigWant(t, c, "spec.parameters.scope", "Cluster") // kube's default

	_, errs, _ = g.create("v1", `
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: "not a controller"}
`)
	rigWantErrs(t, "invalid controller", errs, "spec.controller: Invalid value")

	stored := g.mustCreate("v1", manifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.controller", "example.com/other") })
	rigWantErrs(t, "controller change", errs, "spec.controller: Invalid value")
	up, errs, _ := g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.parameters.name", "q") })
	rigWantErrs(t, "parameters change", errs)
	rigWant(t, up, "metadata.generation", 2)
}

const networkPolicyManifest = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: default}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{ipBlock: {cidr: 10.0.0.0/8}}]
    ports: [{port: 5432}]
`

func TestNetworkPolicies(t *testing.T) {
	g := rigHand(t, nil, "networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, false)
	np, errs, warnings := g.create("v1", networkPolicyManifest)
	rigWantErrs(t, "valid", errs)
	rigWantWarnings(t, "valid", warnings)
	rigWant(t, np, "metadata.generation", 1)
	rigWant(t, np, "spec.policyTypes", []any{"Ingress"}) // kube's defaults
	rigWant(t, np, "spec.ingress", []any{map[string]any{"from": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/8"}}}, "ports": []any{map[string]any{"port": int64(5432), "protocol": "TCP"}}}})

	_, errs, warnings = g.create("v1", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: default}
spec:
  podSelector: {}
  egress:
  - to: [{ipBlock: {cidr: 10.0.0.1/8}}]
    ports: [{port: 70000}]
`)
	rigWantErrs(t, "invalid port and CIDR", errs, "spec.egress[0].ports[0].port: Invalid value", "spec.egress[0].to[0].ipBlock.cidr: Invalid value")
	rigWantWarnings(t, "invalid port", warnings)

	stored := g.mustCreate("v1", networkPolicyManifest)
	up, errs, _ := g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.podSelector.matchLabels.app", "pg") })
	rigWantErrs(t, "selector change", errs)
	rigWant(t, up, "metadata.generation", 2)
	up, _, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "metadata.labels", map[string]any{"a": "b"}) })
	rigWant(t, up, "metadata.generation", 1)
}

// TestNetworkPolicyGeneration: kube compares NetworkPolicy specs strictly, so that an
// empty list where there was none counts as a change.
func TestNetworkPolicyGeneration(t *testing.T) {
	old := &networking.NetworkPolicy{}
	old.Generation = 3
	np := old.DeepCopy()
	np.Spec.Egress = []networking.NetworkPolicyEgressRule{}
	networkPolicyKind().prepareUpdate(t.Context(), np, old)
	if np.Generation != 4 {
		t.Errorf("generation %d after an empty egress list replaced none, want 4", np.Generation)
	}
}

func TestIPBlockWarnings(t *testing.T) {
	np := &networking.NetworkPolicy{Spec: networking.NetworkPolicySpec{
		Ingress: []networking.NetworkPolicyIngressRule{{From: []networking.NetworkPolicyPeer{{}, {IPBlock: &networking.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"::ffff:10.0.0.0/104"}}}}}},
		Egress:  []networking.NetworkPolicyEgressRule{{To: []networking.NetworkPolicyPeer{{IPBlock: &networking.IPBlock{CIDR: "::ffff:10.0.0.0/104"}}}}},
	}}
	got := ipBlockWarnings(np)
	want := []string{"spec.ingress[0].from[1].ipBlock.except[0]", "spec.egress[0].to[0].ipBlock.cidr"}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want one at each of %q", got, want)
	}
	for i := range want {
		if got[i][:len(want[i])] != want[i] {
			t.Errorf("warning %q, want one at %s", got[i], want[i])
		}
	}
}

const ipAddressManifest = `
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.0.0.15}
spec: {parentRef: {resource: services, namespace: default, name: web}}
`

func TestIPAddresses(t *testing.T) {
	g := rigCatalog(t, nil, "networking.k8s.io", "ipaddresses")
	ip, errs, _ := g.create("v1", ipAddressManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, ip, "metadata.generation", nil)

	_, errs, _ = g.create("v1", `
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 010.0.0.15}
spec: {parentRef: {group: "not/a/group", resource: services, name: web}}
`)
	rigWantErrs(t, "invalid", errs, "metadata.name: Invalid value", "spec.parentRef.group: Invalid value")
	_, errs, _ = g.create("v1", `
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: "2001:db8::1"}
spec: {}
`)
	rigWantErrs(t, "no parentRef", errs, "spec.parentRef: Required value")

	stored := g.mustCreate("v1", ipAddressManifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.parentRef.name", "other") })
	rigWantErrs(t, "parentRef change", errs, "spec.parentRef: Invalid value")
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "metadata.labels", map[string]any{"a": "b"}) })
	rigWantErrs(t, "labels change", errs)
}

const serviceCIDRManifest = `
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: extra}
spec: {cidrs: [10.96.0.0/16]}
status: {conditions: [{type: Ready, status: "True", reason: R, message: m, lastTransitionTime: "2026-01-01T00:00:00Z"}]}
`

func TestServiceCIDRs(t *testing.T) {
	g := rigCatalog(t, nil, "networking.k8s.io", "servicecidrs")
	c, errs, _ := g.create("v1", serviceCIDRManifest)
	rigWantErrs(t, "valid", errs)
	rigWant(t, c, "status", map[string]any{})

	for name, cidrs := range map[string][]any{
		"three CIDRs": {"10.0.0.0/24", "2001:db8::/64", "10.1.0.0/24"},
		"one family":  {"10.0.0.0/24", "10.1.0.0/24"},
	} {
		_, errs, _ = g.create("v1", "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: x}\nspec: {}\n")
		rigWantErrs(t, "no CIDRs", errs, "spec.cidrs: Required value")
		obj := g.object(serviceCIDRManifest)
		rigSet(obj.Object, "spec.cidrs", cidrs)
		j, _ := obj.MarshalJSON()
		_, errs, _ = g.create("v1", string(j))
		rigWantErrs(t, name, errs, "spec.cidrs: Invalid value")
	}
	_, errs, _ = g.create("v1", "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: x}\nspec: {cidrs: [10.0.0.1/24]}\n")
	rigWantErrs(t, "host bits", errs, "spec.cidrs[0]: Invalid value")

	stored := g.mustCreate("v1", serviceCIDRManifest)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.cidrs", []any{"10.96.0.0/16", "fd00::/108"}) })
	rigWantErrs(t, "second family", errs)
	_, errs, _ = g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "spec.cidrs", []any{"10.97.0.0/16"}) })
	rigWantErrs(t, "changed CIDR", errs, "spec.cidrs[0]: Invalid value")
	up, errs, _ := g.update("v1", "", stored, func(o map[string]any) { rigSet(o, "status.conditions", []any{}) })
	rigWantErrs(t, "status in the main resource", errs)
	rigWant(t, up, "status", map[string]any{})

	up, errs, _ = g.update("v1", "status", stored, func(o map[string]any) {
		rigSet(o, "spec.cidrs", []any{"10.97.0.0/16"})
		rigSet(o, "status.conditions", []any{map[string]any{"type": "Ready", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}})
	})
	rigWantErrs(t, "status update", errs)
	rigWant(t, up, "spec.cidrs", []any{"10.96.0.0/16"})
}

// TestNetworkingOldVersions: IPAddresses and ServiceCIDRs keep in the catalog a
// version kube no longer has (v1alpha1); they get kube's semantics all the same.
func TestNetworkingOldVersions(t *testing.T) {
	for _, plural := range []string{"ipaddresses", "servicecidrs"} {
		g := rigCatalog(t, nil, "networking.k8s.io", plural)
		if g.r.Version("v1alpha1") == nil {
			t.Errorf("%s: the catalog no longer has v1alpha1; this test is moot", plural)
		}
	}
}

// TestNetworkingOldVersionConversion: an IPAddress stored in v1alpha1, a version kube
// no longer has, still converts (by the catalog's conversion), and v1beta1 by kube's.
func TestNetworkingOldVersionConversion(t *testing.T) {
	g := rigCatalog(t, nil, "networking.k8s.io", "ipaddresses")
	for _, v := range []string{"v1alpha1", "v1beta1"} {
		obj := g.object(strings.Replace(ipAddressManifest, "networking.k8s.io/v1", "networking.k8s.io/"+v, 1))
		if err := g.r.Converter.Convert(t.Context(), []*registry.Object{obj}, "v1"); err != nil {
			t.Fatalf("converting %s to v1: %v", v, err)
		}
		rigWant(t, obj, "apiVersion", "networking.k8s.io/v1")
		rigWant(t, obj, "spec.parentRef.name", "web")
	}
}

// TestCatalogResourcesConfigured: every resource of the networking, discovery,
// storage, node, scheduling and resource groups the catalog serves at 1.37 gets its
// strategy.
func TestCatalogResourcesConfigured(t *testing.T) {
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]bool{"networking.k8s.io": true, "discovery.k8s.io": true, "storage.k8s.io": true,
		"node.k8s.io": true, "scheduling.k8s.io": true, "resource.k8s.io": true}
	n := 0
	for _, cr := range c.Resources() {
		if !groups[cr.Group] {
			continue
		}
		if _, ok := strategies()[cr.GroupResource()]; !ok {
			t.Errorf("%s is in the catalog but has no strategy", cr.GroupResource())
			continue
		}
		rigCatalog(t, nil, cr.Group, cr.Names.Plural)
		n++
	}
	t.Logf("%d resources configured", n)
}
