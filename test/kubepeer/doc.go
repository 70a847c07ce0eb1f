// Package kubepeer runs a real kube-apiserver beside Concord, so that what Concord does
// can be compared with what Kubernetes does on the same machine, in the same run.
//
// build.sh builds the peer (and Kubernetes' own sig-api-machinery end-to-end tests)
// from the k8s.io/kubernetes Go module of a release, cached; Binary finds what it
// built. Start runs the peer as a process on a given etcd, with a generated serving
// certificate, service-account keys and an admin bearer token in system:masters,
// and writes an admin kubeconfig for it. No controller manager, scheduler or node
// runs beside it: the peer is the API server alone, as Concord is.
//
//	bin, err := kubepeer.Binary("kube-apiserver", "1.37.2")
//	p, err := kubepeer.Start(ctx, kubepeer.Options{Binary: bin, Dir: dir, EtcdServers: urls})
//	defer p.Stop()
//	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
//
// The package knows Kubernetes' command line, not Concord's: it must not import
// Concord's packages, so that the peer is set up as any Kubernetes user would.
package kubepeer
