package kubesemantics

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"
)

func TestServices(t *testing.T) {
	r := served(t, schema.GroupResource{Resource: "services"})
	s := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("s", "ns"),
		"spec":   map[string]any{"ports": []any{map[string]any{"port": int64(80)}}, "selector": map[string]any{"app": "x"}},
		"status": map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.2.3.4"}}}}})
	ports, _, _ := unstructured.NestedSlice(s.Object, "spec", "ports")
	port := ports[0].(map[string]any)
	if str(s, "spec", "type") != "ClusterIP" || str(s, "spec", "sessionAffinity") != "None" || str(s, "spec", "internalTrafficPolicy") != "Cluster" ||
		port["protocol"] != "TCP" || port["targetPort"] != int64(80) {
		t.Errorf("defaults: %v", s.Object["spec"])
	}
	if has(s, "status", "loadBalancer", "ingress") || s.GetGeneration() != 0 {
		t.Errorf("a new Service's status %v, generation %d", s.Object["status"], s.GetGeneration())
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("s", "ns"), "spec": map[string]any{"type": "Odd"}})
	wantErrs(t, res.errs, fieldErr{required, "spec.ports"}, fieldErr{notSupported, "spec.type"})
	res = coreCreate(t, r, "v1", map[string]any{"metadata": meta("s", "ns"), "spec": map[string]any{
		"ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30080)}}, "clusterIP": "10.0.0.1", "clusterIPs": []any{"10.0.0.2"}}})
	wantErrs(t, res.errs, fieldErr{invalid, "spec.clusterIPs"}, fieldErr{forbidden, "spec.ports[0].nodePort"})

	// As the allocation left it.
	allocated := coreMustCreate(t, r, "v1", edit(s, func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		spec["clusterIP"], spec["clusterIPs"] = "10.0.0.10", []any{"10.0.0.10"}
		spec["ipFamilies"], spec["ipFamilyPolicy"] = []any{"IPv4"}, "SingleStack"
	}))
	res = coreUpdate(t, r, "v1", "", edit(allocated, func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		spec["type"], spec["externalName"] = "ExternalName", "example.com"
		delete(spec, "internalTrafficPolicy")
	}), allocated)
	if len(res.errs) > 0 || has(res.obj, "spec", "clusterIP") || has(res.obj, "spec", "ipFamilies") || has(res.obj, "spec", "ipFamilyPolicy") {
		t.Errorf("ClusterIP to ExternalName: %v, %v", res.errs, res.obj.Object["spec"])
	}
	res = coreUpdate(t, r, "v1", "", edit(allocated, func(o map[string]any) { o["spec"].(map[string]any)["clusterIPs"] = []any{"10.0.0.11"} }), allocated)
	wantErrs(t, res.errs, fieldErr{invalid, "spec.clusterIPs"}, fieldErr{invalid, "spec.clusterIPs[0]"})

	condition := map[string]any{"type": "Ready", "status": "True", "reason": "Fine", "message": "", "lastTransitionTime": "2026-01-02T03:04:05Z"}
	withStatus := edit(allocated, func(o map[string]any) {
		o["status"] = map[string]any{"conditions": []any{condition}}
		o["spec"].(map[string]any)["sessionAffinity"] = "ClientIP"
	})
	res = coreUpdate(t, r, "v1", "status", withStatus, allocated)
	if len(res.errs) > 0 || !has(res.obj, "status", "conditions") || str(res.obj, "spec", "sessionAffinity") != "None" {
		t.Errorf("a status update: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "", withStatus, allocated)
	if len(res.errs) > 0 || has(res.obj, "status", "conditions") || str(res.obj, "spec", "sessionAffinity") != "ClientIP" {
		t.Errorf("an update: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "status", edit(allocated, func(o map[string]any) {
		o["status"] = map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.2.3.4"}}}}
	}), allocated)
	wantErrs(t, res.errs, fieldErr{forbidden, "status.loadBalancer.ingress"})
}

// A type change drops what the old type used and the client left as it was.
func TestDropReleasedServiceFields(t *testing.T) {
	lb := func() *core.Service {
		return &core.Service{
			Spec: core.ServiceSpec{
				Type: core.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1"},
				Ports:                 []core.ServicePort{{Port: 80, NodePort: 30080}, {Port: 81, NodePort: 30081}},
				ExternalTrafficPolicy: core.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 30100,
				AllocateLoadBalancerNodePorts: ptr.To(true), LoadBalancerClass: ptr.To("example.com/lb"),
				IPFamilies: []core.IPFamily{core.IPv4Protocol}, IPFamilyPolicy: ptr.To(core.IPFamilyPolicySingleStack),
			},
			Status: core.ServiceStatus{LoadBalancer: core.LoadBalancerStatus{Ingress: []core.LoadBalancerIngress{{IP: "1.2.3.4"}}}},
		}
	}
	s, old := lb(), lb()
	s.Spec.Type = core.ServiceTypeClusterIP
	s.Spec.Ports = s.Spec.Ports[:1]
	dropReleasedServiceFields(s, old)
	if s.Spec.Ports[0].NodePort != 0 || s.Spec.HealthCheckNodePort != 0 || s.Spec.AllocateLoadBalancerNodePorts != nil ||
		s.Spec.LoadBalancerClass != nil || s.Spec.ExternalTrafficPolicy != "" || len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("LoadBalancer to ClusterIP: %+v, %+v", s.Spec, s.Status)
	}
	if s.Spec.ClusterIP != "10.0.0.1" || len(s.Spec.IPFamilies) != 1 {
		t.Errorf("LoadBalancer to ClusterIP dropped the cluster IP: %+v", s.Spec)
	}

	s = lb()
	s.Spec.Type = core.ServiceTypeClusterIP
	s.Spec.Ports[1].NodePort = 30999 // a new one: the client means it
	s.Spec.HealthCheckNodePort = 30101
	dropReleasedServiceFields(s, lb())
	if s.Spec.Ports[0].NodePort != 30080 || s.Spec.HealthCheckNodePort != 30101 {
		t.Errorf("node ports the client changed were dropped: %+v", s.Spec)
	}

	s = lb()
	s.Spec.Type, s.Spec.ExternalName = core.ServiceTypeExternalName, "example.com"
	s.Spec.IPFamilies = []core.IPFamily{core.IPv6Protocol}
	dropReleasedServiceFields(s, lb())
	if s.Spec.ClusterIP != "" || s.Spec.ClusterIPs != nil || s.Spec.IPFamilyPolicy != nil || len(s.Spec.IPFamilies) != 1 {
		t.Errorf("LoadBalancer to ExternalName: %+v", s.Spec)
	}
}

// What kube's Service storage checks before it allocates: the cluster IP fields.
func TestServiceIPFieldErrors(t *testing.T) {
	sem, err := testSemantics()
	if err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "300.0.0.1", ClusterIPs: []string{"300.0.0.1"}}}
	errs, err := sem.ServiceIPFieldErrors(svc, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantErrs(t, errs, fieldErr{invalid, "spec.clusterIPs[0]"})
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.0.0.1", []string{"10.0.0.1", "10.0.0.2"}
	old := svc.DeepCopy()
	old.Spec.ClusterIPs = old.Spec.ClusterIPs[:1]
	errs, err = sem.ServiceIPFieldErrors(svc, old)
	if err != nil {
		t.Fatal(err)
	}
	wantErrs(t, errs, fieldErr{invalid, "spec.clusterIPs"})
}
