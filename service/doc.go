// Package service gives core/v1 Services their cluster IPs and node ports, as
// kube-apiserver does with its MultiCIDRServiceAllocator (GA since 1.33), and keeps
// the cluster's own Service, default/kubernetes.
//
// # What it owns
//
//   - Services' behaviour (Configure): what kube-apiserver's Service storage does
//     around the strategy (whose defaults, preparation and validation are package
//     kubesemantics'): clusterIP and clusterIPs kept in step, allocated values an
//     update leaves out kept, the IP families and policy a Service gets from what it
//     asks and what the cluster has, and the allocation itself, a registry Allocate
//     hook in the store's write:
//     spec.clusterIP(s) on creation (ClusterIP, NodePort and LoadBalancer; none for
//     headless "None" or ExternalName), a requested IP honoured or refused with
//     Kubernetes' 422, node ports for NodePort and LoadBalancer (and the health check
//     node port of a LoadBalancer with externalTrafficPolicy Local), changed on type
//     changes, released (Release hook) once the Service is gone.
//   - The allocation records. A cluster IP is a networking.k8s.io/v1 IPAddress named by
//     the address, parentRef the Service, created through the API only if absent (so
//     two servers never hand one IP out twice), from the ranges of the ServiceCIDRs.
//     A node port is an etcd key of its own, ranges/servicenodeports/<port>, written only
//     if absent, holding the Service's namespace, name and UID.
//   - The ranges: --service-cluster-ip-range (one CIDR, or one per IP family) is the
//     default ServiceCIDR "kubernetes", created and kept Ready by every server;
//     --service-node-port-range the node ports. ServiceCIDRs' and IPAddresses'
//     validation is Kubernetes' own (package kubesemantics); this package gives them
//     their table cells.
//   - The repair controllers (leader-elected): an IPAddress or node port record whose
//     Service is gone (or no longer holds it) is removed after a grace period; a
//     Service whose IPAddress or node port record is missing gets it back; a cluster
//     IP or node port two Services hold is reported as a Warning Event on them.
//   - The bootstrap controller of default/kubernetes: ClusterIP the first address of
//     the primary range, port 443 "https" to the servers, and its EndpointSlices, one
//     per port the live servers listen on, naming their addresses, from the servers'
//     identity leases.
//   - Its wiring in a server (Feature): the allocation built before the resources are
//     registered, the informers and controllers above started in order, and the
//     post-start hooks of kube-apiserver's names each marks done.
//
// # What it must not touch
//
// It routes no traffic (there is no kube-proxy) and runs no endpoint controller for
// other Services: their EndpointSlices stay the users' data. Objects travel the
// object store like every resource; only the node port records are raw keys.
package service
