package differential

import (
	"net/http"
	"strings"
)

// The cases of the proxy subresources of Pods, Services and Nodes: every way kube
// refuses to forward a request (a name it cannot read, an object that does not
// exist, an address it will not reach, a Service without a ready endpoint backed by
// a Pod). Forwarding itself reaches a live address, which a recording cannot hold:
// TestProxySubresources tests it.

// getStep reads path.
func getStep(path string) step { return step{method: http.MethodGet, path: path} }

// podStatusIPs makes the Pod at path have the IP ip.
func podStatusIPs(path, ip string) step {
	return step{method: http.MethodPatch, path: path + "/status", ctype: mergeType, body: map[string]any{"status": map[string]any{
		"podIP": ip, "podIPs": []any{map[string]any{"ip": ip}}}}}
}

// podProxyCases proxy to Pods without an IP, with one kube will not reach, and to
// Pods and names that do not exist; and send paths beyond subresources that take
// none.
func podProxyCases(g podRig) []tcase {
	base := g.r.id() + "/proxy/"
	withPort := []map[string]any{{"name": "c", "image": "registry.k8s.io/pause:3.10", "ports": []any{map[string]any{"containerPort": 8080}}}}
	requests := []struct {
		label, ip, method, target string // target: the name and what follows it ("%" is the Pod's name)
	}{
		{"no-ip", "", http.MethodGet, "%/proxy"},
		{"no-ip-subpath", "", http.MethodPost, "%/proxy/some/path/?q=1"},
		{"no-ip-port", "", http.MethodGet, "%:8080/proxy/"},
		{"loopback", "127.0.0.1", http.MethodGet, "%/proxy/"},
		{"link-local", "169.254.1.1", http.MethodPut, "https:%:443/proxy/x"},
		{"bad-name", "", http.MethodGet, "a:b:c:d/proxy"},
		{"missing", "", http.MethodGet, "nosuch/proxy/x"},
		{"status-subpath", "", http.MethodGet, "%/status/x"},
		{"log-subpath", "", http.MethodGet, "%/log/x"},
	}
	var out []tcase
	for _, q := range requests {
		id := base + q.label
		n := objName(id)
		steps := []step{g.create(n, "", withPort...)}
		if q.ip != "" {
			steps = append(steps, podStatusIPs(g.path(n, ""), q.ip))
		}
		target := g.pods + "/" + strings.ReplaceAll(q.target, "%", n)
		steps = append(steps, step{method: q.method, path: target})
		out = append(out, tcase{id: id, res: g.r, invalid: true, steps: steps})
	}
	return out
}

// serviceProxyCases proxy to Services without endpoints, with endpoints kube will not
// use (no Pod behind them, a Pod of another address), by port name and number, and
// to Services that do not exist.
func serviceProxyCases(r resource) []tcase {
	base := r.id() + "/proxy/"
	services := r.collection("v1")
	pods := podRig{r: r, pods: "/api/v1/namespaces/" + r.namespace() + "/pods"}
	slices := "/apis/discovery.k8s.io/v1/namespaces/" + r.namespace() + "/endpointslices"
	service := func(n string) step {
		return step{method: http.MethodPost, path: services, ctype: jsonType, body: map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": n}, "spec": map[string]any{"ports": []any{map[string]any{"name": "http", "port": 80}}}}}
	}
	slice := func(n, ip, pod string) step {
		ep := map[string]any{"addresses": []any{ip}, "conditions": map[string]any{"ready": true}}
		if pod != "" {
			ep["targetRef"] = map[string]any{"kind": "Pod", "name": pod, "namespace": r.namespace()}
		}
		return step{method: http.MethodPost, path: slices, ctype: jsonType, body: map[string]any{"apiVersion": "discovery.k8s.io/v1",
			"kind": "EndpointSlice", "metadata": map[string]any{"name": n, "labels": map[string]any{"kubernetes.io/service-name": n}},
			"addressType": "IPv4", "endpoints": []any{ep}, "ports": []any{map[string]any{"name": "http", "port": 8080}}}}
	}
	cases := []struct {
		label  string
		steps  func(n string) []step
		target string
	}{
		{"no-endpoints", func(n string) []step { return []step{service(n)} }, "%/proxy/"},
		{"no-endpoints-port-name", func(n string) []step { return []step{service(n)} }, "%:http/proxy/x"},
		{"unknown-port-number", func(n string) []step { return []step{service(n)} }, "%:81/proxy/"},
		{"missing", func(string) []step { return nil }, "nosuch/proxy/"},
		{"missing-port-number", func(string) []step { return nil }, "nosuch:80/proxy/"},
		{"bad-name", func(string) []step { return nil }, "a:b:c:d/proxy"},
		{"endpoint-without-pod", func(n string) []step { return []step{service(n), slice(n, "192.0.2.77", "")} }, "%:80/proxy/"},
		{"endpoint-of-missing-pod", func(n string) []step { return []step{service(n), slice(n, "192.0.2.77", "nosuch")} }, "%/proxy/"},
		{"endpoint-not-the-pods-ip", func(n string) []step {
			return []step{service(n), pods.create(n, ""), podStatusIPs(pods.path(n, ""), "192.0.2.78"), slice(n, "192.0.2.77", n)}
		}, "%:http/proxy/"},
	}
	var out []tcase
	for _, c := range cases {
		id := base + c.label
		n := objName(id)
		steps := append(c.steps(n), getStep(services+"/"+strings.ReplaceAll(c.target, "%", n)))
		out = append(out, tcase{id: id, res: r, invalid: true, steps: steps})
	}
	return out
}

// nodeProxyCases proxy to Nodes without an address, with one kube will not reach,
// and to Nodes and names that do not exist.
func nodeProxyCases(r resource) []tcase {
	base := r.id() + "/proxy/"
	nodes := r.collection("v1")
	address := func(n, ip string) step {
		return step{method: http.MethodPatch, path: nodes + "/" + n + "/status", ctype: mergeType, body: map[string]any{"status": map[string]any{
			"addresses": []any{map[string]any{"type": "InternalIP", "address": ip}}}}}
	}
	cases := []struct{ label, ip, target string }{
		{"no-address", "", "%/proxy/"},
		{"loopback", "127.0.0.1", "%/proxy/pods"},
		{"loopback-other-port", "127.0.0.1", "%:8080/proxy/"},
		{"bad-name", "", "a:b:c:d/proxy"},
		{"missing", "", "nosuch/proxy/"},
	}
	var out []tcase
	for _, c := range cases {
		id := base + c.label
		n := objName(id)
		steps := []step{{method: http.MethodPost, path: nodes, ctype: jsonType, body: map[string]any{"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": n}}}}
		if c.ip != "" {
			steps = append(steps, address(n, c.ip))
		}
		steps = append(steps, getStep(nodes+"/"+strings.ReplaceAll(c.target, "%", n)))
		out = append(out, tcase{id: id, res: r, invalid: true, steps: steps, cleanup: []step{{method: http.MethodDelete, path: nodes + "/" + n}}})
	}
	return out
}
