package integration

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestProxySubresources: requests to pods/<name>/proxy, services/<name>/proxy and
// nodes/<name>/proxy reach the object's address as through kube-apiserver: method,
// path and query forwarded, the caller's credentials not, links in HTML rewritten to
// come back through the server; a Service picks its endpoint by port name or number;
// a Node's kubelet port is answered as Concord answers kubelets (503), its other
// ports forwarded (a kubelet not listening is the dial's 503). The refusals are the differential corpus's (test/differential
// proxy_test.go).
func TestProxySubresources(t *testing.T) {
	t.Parallel()
	ip := globalUnicastIP(t)
	backend := serveOn(t, ip, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><a href="/other">other</a></body></html>`)
			return
		}
		fmt.Fprintf(w, "%s %s authorization=%q", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"))
	}))
	port := backend.Listener.Addr().(*net.TCPAddr).Port
	kubelet := serveOn(t, ip, http.NotFoundHandler())
	c := harness.Start(t, 1)
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	namespace(t, admin, "proxy", nil)

	pod := newPod("web", "")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: int32(port)}}
	pod, err := admin.CoreV1().Pods("proxy").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	if _, err := admin.CoreV1().Pods("proxy").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := admin.CoreV1().Pods("proxy").ProxyGet("", "web", "", "a/b", map[string]string{"q": "1"}).DoRaw(ctx)
	if want := `GET /a/b?q=1 authorization=""`; err != nil || string(got) != want {
		t.Errorf("GET through pods/web/proxy: %q, %v; want %q", got, err, want)
	}
	got, err = admin.CoreV1().RESTClient().Post().Namespace("proxy").Resource("pods").Name("web:"+strconv.Itoa(port)).
		SubResource("proxy", "submit").Body([]byte("x")).DoRaw(ctx)
	if want := `POST /submit authorization=""`; err != nil || string(got) != want {
		t.Errorf("POST through pods/web:%d/proxy: %q, %v; want %q", port, got, err, want)
	}
	got, err = admin.CoreV1().Pods("proxy").ProxyGet("", "web", "", "page", nil).DoRaw(ctx)
	if want := `href="/api/v1/namespaces/proxy/pods/web/proxy/other"`; err != nil || !strings.Contains(string(got), want) {
		t.Errorf("an HTML page through pods/web/proxy: %q, %v; want its link rewritten to %s", got, err, want)
	}

	proxyToService(t, c, ip, port)
	proxyToNode(t, c, ip, port, kubelet.Listener.Addr().(*net.TCPAddr).Port)
}

// proxyToService reaches the backend at ip:port through a Service whose EndpointSlice
// names the Pod web of namespace proxy.
func proxyToService(t *testing.T, c *harness.Cluster, ip string, port int) {
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := admin.CoreV1().Services("proxy").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Services("proxy").ProxyGet("", "web", "http", "/", nil).DoRaw(ctx); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("a Service without endpoints: %v, want kube's 503", err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "proxy", Name: "web"}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port))}}}
	if _, err := admin.DiscoveryV1().EndpointSlices("proxy").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"http", "80"} {
		got, err := admin.CoreV1().Services("proxy").ProxyGet("", "web", p, "svc", nil).DoRaw(ctx)
		if want := `GET /svc authorization=""`; err != nil || string(got) != want {
			t.Errorf("GET through services/web:%s/proxy: %q, %v; want %q", p, got, err, want)
		}
	}
}

// proxyToNode reaches the backend at ip:port through a Node of address ip, whose
// kubelet listens at ip:kubeletPort.
func proxyToNode(t *testing.T, c *harness.Cluster, ip string, port, kubeletPort int) {
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "proxied"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(kubeletPort)
	if node, err = admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeProxy := func(name, path string) ([]byte, error) {
		return admin.CoreV1().RESTClient().Get().Resource("nodes").Name(name).SubResource("proxy", path).DoRaw(ctx)
	}
	got, err := nodeProxy("proxied:"+strconv.Itoa(port), "node")
	if want := `GET /node authorization=""`; err != nil || string(got) != want {
		t.Errorf("GET through nodes/proxied:%d/proxy: %q, %v; want %q", port, got, err, want)
	}
	// Do, not DoRaw, whose error does not read the Status.
	err = admin.CoreV1().RESTClient().Get().Resource("nodes").Name("proxied").SubResource("proxy", "pods").Do(ctx).Error()
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "does not proxy to kubelets") {
		t.Errorf("GET through nodes/proxied/proxy, to its kubelet: %v, want a 503 saying Concord proxies to no kubelet", err)
	}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(closedPort(t, ip))
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = admin.CoreV1().RESTClient().Get().Resource("nodes").Name("proxied").SubResource("proxy", "pods").Do(ctx).Error()
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "error trying to reach service: dial tcp") {
		t.Errorf("GET through nodes/proxied/proxy, to a kubelet not listening: %v, want kube's 503 with the dial's error", err)
	}
}

// closedPort returns a port of ip that nothing listens on.
func closedPort(t *testing.T, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// globalUnicastIP returns an IPv4 address of this machine that kube would proxy to
// (global unicast), or skips the test when it has none.
func globalUnicastIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no global unicast IPv4 address for a Pod to have")
	return ""
}

// serveOn serves h on ip, on a free port, until the test ends.
func serveOn(t *testing.T, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}
