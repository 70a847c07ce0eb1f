// Package clusterproxy serves the proxy subresources, pods/<name>/proxy,
// services/<name>/proxy and nodes/<name>/proxy (kubectl proxy's
// /api/v1/namespaces/<ns>/services/<name>:<port>/proxy/...), as kube-apiserver
// serves them: the request, its method, headers, query and the path beyond the
// subresource, is forwarded to the object's address, and the answer back, with links
// in HTML rewritten to go through the server again and upgrades (WebSockets) carried
// through (k8s.io/apimachinery's UpgradeAwareHandler).
//
// # What it owns
//
//   - Proxy.ConfigurePods, ConfigureServices and ConfigureNodes: each resource's
//     proxy subresource (a registry.Connect that takes a subpath), with kube's
//     methods and options kind.
//   - Where each request goes, step by step as kube's ResourceLocation finds it:
//     the name read as [scheme:]name[:port] (400 if it cannot be); a Pod's first IP
//     and the port asked for or its first container port; a Service's ready
//     endpoint from its EndpointSlices, one backed by a Pod of that IP, on the
//     service port named or numbered (503 when there is none); a Node's preferred
//     address. An address that is not global unicast (loopback, link-local) is
//     refused (400 "address not allowed"), so the server cannot be made to reach
//     itself.
//   - The transport: TLS without verifying the target, as kube's proxy transport
//     (Pods and Services are reached by IP). A Node's kubelet port is the one place
//     kube would use its kubelet client credentials; Concord has none, so that
//     request is answered as package podconnect answers a kubelet: the dial's error
//     when it cannot be reached, else 503.
//
// # What it must not touch
//
// It reads Pods, Services, EndpointSlices and Nodes through the store and writes
// nothing. The server routes and authorizes the request (registry.Connect); nothing
// here decides who may proxy.
package clusterproxy
