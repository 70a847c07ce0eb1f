package integration

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/service"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The ranges of TestServiceClusterIPs: small, so that concurrent allocations meet.
const (
	testIPRange    = "10.96.0.0/26"
	testPortRange  = "30000-30039"
	testPortFirst  = 30000
	testPortLast   = 30039
	testRepairTime = 2 * time.Second
)

// newService returns a Service named name of typ with one port (80).
func newService(name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Port: 80}}},
	}
}

// ipAddressOf returns the IPAddress of ip (nil if there is none).
func ipAddressOf(t *testing.T, cs kubernetes.Interface, ip string) *networkingv1.IPAddress {
	t.Helper()
	a, err := cs.NetworkingV1().IPAddresses().Get(t.Context(), ip, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// nodePortRecord returns the owner recorded for node port port in etcd ("" if none).
func nodePortRecord(t *testing.T, c *harness.Cluster, port int32) string {
	t.Helper()
	resp, err := c.EtcdClient.Get(t.Context(), fmt.Sprintf("/registry/%s%d", service.NodePortsPrefix, port))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// wantInvalid checks that err is Kubernetes' 422 with exactly message.
func wantInvalid(t *testing.T, err error, message string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || err.Error() != message {
		t.Fatalf("got %v, want 422 %q", err, message)
	}
}

// TestServiceClusterIPs: two servers allocate Services' cluster IPs (IPAddresses) and
// node ports (etcd records) from --service-cluster-ip-range and
// --service-node-port-range, as Kubernetes does: from the range on creation, a
// requested one honoured, a taken or out-of-range one refused with Kubernetes' 422,
// none for ExternalName and headless Services, released on deletion and on a type
// change, never one twice when both servers create Services at once. The elected
// repair controller puts back a deleted IPAddress or node port record, removes an
// orphan IPAddress, and reports a node port two Services hold. The kubernetes Service
// names both servers in its EndpointSlices, and no longer a stopped one.
func TestServiceClusterIPs(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Services.ClusterIPRange, o.Services.NodePortRange, o.Services.RepairGrace = testIPRange, testPortRange, testRepairTime
	}))
	cs0, cs1 := c.Servers[0].Clientset(t), c.Servers[1].Clientset(t)
	ctx := t.Context()
	svcs0 := cs0.CoreV1().Services("default")
	prefix := netip.MustParsePrefix(testIPRange)

	t.Run("allocated from the range", func(t *testing.T) {
		svc, err := svcs0.Create(ctx, newService("web", ""), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip := netip.MustParseAddr(svc.Spec.ClusterIP)
		if !prefix.Contains(ip) || !slices.Equal(svc.Spec.ClusterIPs, []string{ip.String()}) || svc.Spec.Type != corev1.ServiceTypeClusterIP ||
			!slices.Equal(svc.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			t.Fatalf("spec = %+v, want a cluster IP of %s, single-stack IPv4", svc.Spec, prefix)
		}
		rec := ipAddressOf(t, cs1, ip.String())
		if rec == nil || rec.Spec.ParentRef == nil || *rec.Spec.ParentRef != (networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}) ||
			rec.Labels[networkingv1.LabelManagedBy] != service.IPAllocatorName || rec.Labels[networkingv1.LabelIPAddressFamily] != "IPv4" {
			t.Fatalf("IPAddress %s = %+v", ip, rec)
		}
	})

	t.Run("requested honoured, taken or out of range refused", func(t *testing.T) {
		svc := newService("fixed", "")
		svc.Spec.ClusterIP = "10.96.0.5"
		if got, err := svcs0.Create(ctx, svc, metav1.CreateOptions{}); err != nil || got.Spec.ClusterIP != "10.96.0.5" {
			t.Fatalf("requested IP: %v %v", got, err)
		}
		svc.Name = "twin"
		_, err := cs1.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		wantInvalid(t, err, `Service "twin" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.5"]: failed to allocate IP 10.96.0.5: provided IP is already allocated`)
		svc.Name, svc.Spec.ClusterIP = "far", "10.97.0.1"
		_, err = svcs0.Create(ctx, svc, metav1.CreateOptions{})
		wantInvalid(t, err, `Service "far" is invalid: spec.clusterIPs: Invalid value: ["10.97.0.1"]: failed to allocate IP 10.97.0.1: the provided network does not match the current range`)
		svc.Name, svc.Spec.ClusterIP = "broadcast", "10.96.0.63"
		_, err = svcs0.Create(ctx, svc, metav1.CreateOptions{})
		wantInvalid(t, err, `Service "broadcast" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.63"]: failed to allocate IP 10.96.0.63: the provided network does not match the current range`)
		svc.Name, svc.Spec.ClusterIP = "six", "fd00::1"
		_, err = svcs0.Create(ctx, svc, metav1.CreateOptions{})
		wantInvalid(t, err, `Service "six" is invalid: spec.clusterIPs[0]: Invalid value: ["fd00::1"]: IPv6 is not configured on this cluster`)
		// What is no IP is refused before anything is allocated, with kube's message alone.
		svc.Name, svc.Spec.ClusterIP = "malformed", "300.0.0.1"
		_, err = svcs0.Create(ctx, svc, metav1.CreateOptions{})
		wantInvalid(t, err, `Service "malformed" is invalid: spec.clusterIPs[0]: Invalid value: "300.0.0.1": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`)
		for _, ip := range []string{"10.97.0.1", "fd00::1"} {
			if ipAddressOf(t, cs0, ip) != nil {
				t.Fatalf("a refused Service left IPAddress %s", ip)
			}
		}
	})

	t.Run("none for ExternalName and headless", func(t *testing.T) {
		before, err := cs0.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}}
		got, err := svcs0.Create(ctx, ext, metav1.CreateOptions{})
		if err != nil || got.Spec.ClusterIP != "" || len(got.Spec.ClusterIPs) != 0 || got.Spec.IPFamilyPolicy != nil {
			t.Fatalf("ExternalName: %+v %v", got, err)
		}
		headless := newService("headless", "")
		headless.Spec.ClusterIP = corev1.ClusterIPNone
		headless.Spec.Selector = map[string]string{"app": "db"}
		got, err = svcs0.Create(ctx, headless, metav1.CreateOptions{})
		if err != nil || !slices.Equal(got.Spec.ClusterIPs, []string{"None"}) {
			t.Fatalf("headless: %+v %v", got, err)
		}
		after, err := cs0.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
		if err != nil || len(after.Items) != len(before.Items) {
			t.Fatalf("IPAddresses %d → %d (%v): ExternalName and headless Services got some", len(before.Items), len(after.Items), err)
		}
	})

	t.Run("released on delete and reusable", func(t *testing.T) {
		if err := svcs0.Delete(ctx, "fixed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if ipAddressOf(t, cs1, "10.96.0.5") != nil {
			t.Fatal("the IPAddress of a deleted Service is still there")
		}
		svc := newService("reuse", "")
		svc.Spec.ClusterIP = "10.96.0.5"
		if _, err := cs1.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the released IP: %v", err)
		}
	})

	t.Run("node ports", func(t *testing.T) {
		svc := newService("np", corev1.ServiceTypeNodePort)
		svc.Spec.Ports[0].NodePort = 30005
		got, err := svcs0.Create(ctx, svc, metav1.CreateOptions{})
		if err != nil || got.Spec.Ports[0].NodePort != 30005 || got.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
			t.Fatalf("requested node port: %+v %v", got, err)
		}
		if rec := nodePortRecord(t, c, 30005); !strings.Contains(rec, `"name":"np"`) || !strings.Contains(rec, string(got.UID)) {
			t.Fatalf("record of 30005 = %q", rec)
		}
		svc.Name = "np-twin"
		_, err = cs1.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		wantInvalid(t, err, `Service "np-twin" is invalid: spec.ports[0].nodePort: Invalid value: 30005: provided port is already allocated`)
		svc.Name, svc.Spec.Ports[0].NodePort = "np-far", 20080
		_, err = svcs0.Create(ctx, svc, metav1.CreateOptions{})
		wantInvalid(t, err, fmt.Sprintf(`Service "np-far" is invalid: spec.ports[0].nodePort: Invalid value: 20080: provided port is not in the valid range. The range of valid ports is %s`, testPortRange))
		lb := newService("lb", corev1.ServiceTypeLoadBalancer)
		lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		got, err = svcs0.Create(ctx, lb, metav1.CreateOptions{})
		if err != nil || got.Spec.Ports[0].NodePort < testPortFirst || got.Spec.Ports[0].NodePort > testPortLast ||
			got.Spec.HealthCheckNodePort < testPortFirst || got.Spec.HealthCheckNodePort > testPortLast || !ptr.Deref(got.Spec.AllocateLoadBalancerNodePorts, false) {
			t.Fatalf("LoadBalancer: %+v %v", got.Spec, err)
		}
		// A status write (a load balancer's ingress) allocates nothing and keeps the spec.
		got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.7"}}
		if st, err := svcs0.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil || st.Spec.ClusterIP != got.Spec.ClusterIP ||
			st.Spec.Ports[0].NodePort != got.Spec.Ports[0].NodePort || len(st.Status.LoadBalancer.Ingress) != 1 {
			t.Fatalf("a LoadBalancer's status: %+v %v", st, err)
		}
		if got, err = svcs0.Get(ctx, "lb", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		// A type change to ClusterIP gives the node ports back, to ExternalName the IP.
		got.Spec.Type, got.Spec.ExternalTrafficPolicy = corev1.ServiceTypeClusterIP, ""
		np, hc, ip := got.Spec.Ports[0].NodePort, got.Spec.HealthCheckNodePort, got.Spec.ClusterIP
		got, err = svcs0.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil || got.Spec.Ports[0].NodePort != 0 || got.Spec.HealthCheckNodePort != 0 || got.Spec.ClusterIP != ip {
			t.Fatalf("to ClusterIP: %+v %v", got, err)
		}
		if nodePortRecord(t, c, np) != "" || nodePortRecord(t, c, hc) != "" {
			t.Fatalf("node ports %d and %d are still recorded after a change to ClusterIP", np, hc)
		}
		got.Spec.Type, got.Spec.ExternalName = corev1.ServiceTypeExternalName, "lb.example.com"
		if got, err = svcs0.Update(ctx, got, metav1.UpdateOptions{}); err != nil || got.Spec.ClusterIP != "" {
			t.Fatalf("to ExternalName: %+v %v", got, err)
		}
		if ipAddressOf(t, cs0, ip) != nil {
			t.Fatalf("IPAddress %s is still there after a change to ExternalName", ip)
		}
	})

	t.Run("concurrent creations on two servers never share", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for n := range 20 {
			cs := []kubernetes.Interface{cs0, cs1}[n%2]
			wg.Go(func() {
				_, err := cs.CoreV1().Services("default").Create(ctx, newService(fmt.Sprintf("race-%d", n), corev1.ServiceTypeNodePort), metav1.CreateOptions{})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		list, err := svcs0.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ips, ports := map[string]string{}, map[int32]string{}
		for _, s := range list.Items {
			for _, ip := range s.Spec.ClusterIPs {
				if other, ok := ips[ip]; ok && ip != "None" {
					t.Fatalf("%s and %s share cluster IP %s", s.Name, other, ip)
				}
				ips[ip] = s.Name
				if a := ipAddressOf(t, cs0, ip); ip != "None" && (a == nil || a.Spec.ParentRef.Name != s.Name) {
					t.Fatalf("IPAddress %s = %+v, want %s's", ip, a, s.Name)
				}
			}
			for _, p := range s.Spec.Ports {
				if p.NodePort == 0 {
					continue
				}
				if other, ok := ports[p.NodePort]; ok {
					t.Fatalf("%s and %s share node port %d", s.Name, other, p.NodePort)
				}
				ports[p.NodePort] = s.Name
				if rec := nodePortRecord(t, c, p.NodePort); !strings.Contains(rec, `"name":"`+s.Name+`"`) {
					t.Fatalf("record of %d = %q, want %s's", p.NodePort, rec, s.Name)
				}
			}
		}
	})

	t.Run("repair", func(t *testing.T) {
		web, err := svcs0.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs0.NetworkingV1().IPAddresses().Delete(ctx, web.Spec.ClusterIP, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the deleted IPAddress back", func() (bool, error) {
			a := ipAddressOf(t, cs1, web.Spec.ClusterIP)
			return a != nil && a.Spec.ParentRef.Name == "web", nil
		})
		orphan := &networkingv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Name: "10.96.0.9", Labels: map[string]string{networkingv1.LabelManagedBy: service.IPAllocatorName}},
			Spec:       networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "ghost"}},
		}
		if _, err := cs1.NetworkingV1().IPAddresses().Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the orphan IPAddress removed", func() (bool, error) { return ipAddressOf(t, cs0, orphan.Name) == nil, nil })

		// A node port record deleted behind the servers' backs comes back.
		np, err := svcs0.Get(ctx, "np", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.EtcdClient.Delete(ctx, fmt.Sprintf("/registry/%s%d", service.NodePortsPrefix, 30005)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the node port record back", func() (bool, error) {
			return strings.Contains(nodePortRecord(t, c, 30005), string(np.UID)), nil
		})
		// A Service written straight to etcd with web's cluster IP and np's node port is
		// reported, and neither record moves to it.
		dup := fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"dup","namespace":"default","uid":"d0d0d0d0-0000-0000-0000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z"},`+
			`"spec":{"type":"NodePort","ports":[{"port":80,"protocol":"TCP","targetPort":80,"nodePort":30005}],"sessionAffinity":"None","externalTrafficPolicy":"Cluster",`+
			`"internalTrafficPolicy":"Cluster","clusterIP":%q,"clusterIPs":[%q],"ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack"}}`, web.Spec.ClusterIP, web.Spec.ClusterIP)
		if _, err := c.EtcdClient.Put(ctx, "/registry/core/services/default/dup", dup); err != nil {
			t.Fatal(err)
		}
		for reason, note := range map[string]string{
			"PortAlreadyAllocated":      "Port 30005 was assigned to multiple services; please recreate service",
			"ClusterIPAlreadyAllocated": fmt.Sprintf("Cluster IP [IPv4]:%s was assigned to multiple services; please recreate service", web.Spec.ClusterIP),
		} {
			waitFor(t, "a "+reason+" Event on dup", func() (bool, error) {
				evs, err := cs1.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				for _, e := range evs.Items {
					if e.Regarding.Name == "dup" && e.Reason == reason && e.Note == note && e.Type == corev1.EventTypeWarning {
						return true, nil
					}
				}
				return false, nil
			})
		}
		if rec := nodePortRecord(t, c, 30005); !strings.Contains(rec, string(np.UID)) {
			t.Fatalf("the record of 30005 moved to the duplicate: %q", rec)
		}
		if a := ipAddressOf(t, cs0, web.Spec.ClusterIP); a == nil || a.Spec.ParentRef.Name != "web" {
			t.Fatalf("the IPAddress of %s moved to the duplicate: %+v", web.Spec.ClusterIP, a)
		}
		if _, err := c.EtcdClient.Delete(ctx, "/registry/core/services/default/dup", clientv3.WithPrevKV()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the kubernetes Service and its endpoints", func(t *testing.T) {
		k, err := svcs0.Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if k.Spec.ClusterIP != "10.96.0.1" || len(k.Spec.Ports) != 1 || k.Spec.Ports[0].Name != "https" || k.Spec.Ports[0].Port != 443 ||
			k.Spec.Ports[0].TargetPort.StrVal != "https" || k.Labels["component"] != "apiserver" {
			t.Fatalf("kubernetes Service = %+v", k)
		}
		endpoints := func() []string {
			list, err := cs0.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, s := range list.Items {
				for _, e := range s.Endpoints {
					for _, p := range s.Ports {
						if *p.Name != "https" || !*e.Conditions.Ready {
							t.Fatalf("slice %s: port %+v, endpoint %+v", s.Name, p, e)
						}
						out = append(out, fmt.Sprintf("https://%s:%d", e.Addresses[0], *p.Port))
					}
				}
			}
			slices.Sort(out)
			return out
		}
		// Its port is put back when changed (its controller may write it meanwhile).
		if _, err := updateRetrying(ctx, svcs0.Get, svcs0.Update, "kubernetes", func(k *corev1.Service) { k.Spec.Ports[0].Port = 8443 }); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the kubernetes Service's port back at 443", func() (bool, error) {
			k, err := cs1.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
			return err == nil && k.Spec.Ports[0].Port == 443, err
		})
		want := []string{c.Servers[0].URL, c.Servers[1].URL}
		slices.Sort(want)
		waitFor(t, "both servers in the kubernetes endpoints", func() (bool, error) { return slices.Equal(endpoints(), want), nil })
		c.Servers[1].Stop(t)
		waitFor(t, "the stopped server gone from the kubernetes endpoints", func() (bool, error) {
			return slices.Equal(endpoints(), []string{c.Servers[0].URL}), nil
		})
	})
}

// TestDualStackServices: with an IPv4 and an IPv6 range, Services get one cluster IP
// or two as their ipFamilyPolicy asks, as Kubernetes gives them; each address has its
// IPAddress, and releasing the secondary family frees its address.
func TestDualStackServices(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Services.ClusterIPRange = "10.96.0.0/26,fd00:10:96::/120"
	}))
	cs := c.Servers[0].Clientset(t)
	ctx := t.Context()
	svcs := cs.CoreV1().Services("default")
	single, err := svcs.Create(ctx, newService("single", ""), metav1.CreateOptions{})
	if err != nil || len(single.Spec.ClusterIPs) != 1 || !slices.Equal(single.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) {
		t.Fatalf("no policy: %+v %v", single.Spec, err)
	}
	dual := newService("dual", "")
	dual.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
	got, err := svcs.Create(ctx, dual, metav1.CreateOptions{})
	if err != nil || len(got.Spec.ClusterIPs) != 2 || !slices.Equal(got.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}) ||
		!netip.MustParsePrefix("fd00:10:96::/120").Contains(netip.MustParseAddr(got.Spec.ClusterIPs[1])) {
		t.Fatalf("RequireDualStack: %+v %v", got.Spec, err)
	}
	for i, ip := range got.Spec.ClusterIPs {
		if a := ipAddressOf(t, cs, ip); a == nil || a.Labels[networkingv1.LabelIPAddressFamily] != string(got.Spec.IPFamilies[i]) {
			t.Fatalf("IPAddress of %s: %+v", ip, a)
		}
	}
	v6 := newService("six", "")
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	if six, err := svcs.Create(ctx, v6, metav1.CreateOptions{}); err != nil || !netip.MustParseAddr(six.Spec.ClusterIP).Is6() {
		t.Fatalf("IPv6 only: %+v %v", six, err)
	}
	// Releasing the secondary family takes SingleStack, as in Kubernetes.
	secondary := got.Spec.ClusterIPs[1]
	got.Spec.ClusterIPs, got.Spec.IPFamilies = got.Spec.ClusterIPs[:1], got.Spec.IPFamilies[:1]
	_, err = svcs.Update(ctx, got, metav1.UpdateOptions{})
	wantInvalid(t, err, `Service "dual" is invalid: [spec.ipFamilyPolicy: Invalid value: "RequireDualStack": must be 'SingleStack' to release the secondary cluster IP, `+
		`spec.ipFamilyPolicy: Invalid value: "RequireDualStack": must be 'SingleStack' to release the secondary IP family]`)
	got.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	if _, err := svcs.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("downgrade: %v", err)
	}
	if ipAddressOf(t, cs, secondary) != nil {
		t.Fatalf("the released secondary address %s is still allocated", secondary)
	}
}

// Servers started with different --service-cluster-ip-range values allocate from the
// cluster's default ServiceCIDR, whichever of them created it: the stored range
// decides, a flag only stands for it until it is read.
func TestServiceCIDRDecidesOverTheFlag(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		o.Services.ClusterIPRange = []string{"10.96.0.0/24", "10.99.0.0/24"}[i]
	}))
	cidr, err := c.Servers[0].Clientset(t).NetworkingV1().ServiceCIDRs().Get(t.Context(), "kubernetes", metav1.GetOptions{})
	if err != nil || len(cidr.Spec.CIDRs) != 1 {
		t.Fatalf("the default ServiceCIDR: %+v %v", cidr, err)
	}
	stored := netip.MustParsePrefix(cidr.Spec.CIDRs[0])
	for _, s := range c.Servers {
		cs := s.Clientset(t)
		waitFor(t, fmt.Sprintf("server %d to read the default ServiceCIDR", s.Index), func() (bool, error) {
			svc, err := cs.CoreV1().Services("default").Create(t.Context(), newService("probe", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return false, err
			}
			return stored.Contains(netip.MustParseAddr(svc.Spec.ClusterIP)), nil
		})
		for i := range 5 {
			svc, err := cs.CoreV1().Services("default").Create(t.Context(), newService(fmt.Sprintf("s%d-%d", s.Index, i), ""), metav1.CreateOptions{})
			if err != nil || !stored.Contains(netip.MustParseAddr(svc.Spec.ClusterIP)) {
				t.Fatalf("a Service created through server %d, outside the default ServiceCIDR %s: %+v %v", s.Index, stored, svc, err)
			}
		}
	}
}
