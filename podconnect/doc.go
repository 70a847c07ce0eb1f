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
//     address kube would use, is kube's 404 or 500; a stream that is no upgrade
//     request is kube's 400. What remains is a connection to the node's kubelet:
//     Concord dials it, and answers kube's 500 when it cannot be reached (the dial's
//     error, as kube words it), else 503, for it proxies to no kubelet.
//
// # What it must not touch
//
// It reads Pods and Nodes through the store and writes nothing. The server routes
// and authorizes the requests (registry.Connect); the proxy subresource, which
// reaches the Pod itself, is not served.
package podconnect
