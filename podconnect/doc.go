// Package podconnect answers a Pod's connect subresources, pods/<name>/log, exec,
// attach and portforward (kubectl logs, exec, attach and port-forward), as
// kube-apiserver answers them when it cannot reach the Pod's node: Concord runs no
// kubelet and proxies to none.
//
// # What it owns
//
//   - Connector.ConfigurePods: the four subresources (registry.Connect), with kube's
//     verbs (log: get; the streams: get and create, each needing create) and kinds.
//   - The answers, step by step as kube's: the query decoded as the subresource's
//     options (kube's parameter codec; 400), a log's options validated (422), the Pod
//     read (404), its container chosen or checked (400: a name is needed among
//     several, or names none of its containers), then its node: none assigned is an
//     empty log (204) and a 400 for the streams; a node that does not exist, or has no
//     address kube would use, is kube's 404 or 500. What remains is the node's
//     kubelet: a WebSocket exec or attach (kubectl's) goes through kube's own
//     translation to the kubelet's SPDY (k8s.io/apiserver's StreamTranslatorHandler),
//     which answers an unreachable kubelet in the stream as kube does; any other
//     stream must ask for an upgrade (kube's 400); a log or SPDY stream dials the
//     kubelet and answers kube's 500 when it cannot be reached (the dial's error, as
//     kube words it), else 503, for Concord proxies to no kubelet.
//
// # What it must not touch
//
// It reads Pods and Nodes through the store and writes nothing. The server routes
// and authorizes the requests (registry.Connect); the proxy subresource, which
// reaches the Pod itself, is package clusterproxy's.
package podconnect
