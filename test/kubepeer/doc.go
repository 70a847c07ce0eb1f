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
// build.sh also builds k8s.io/sample-apiserver of the release (module v0.<minor>.<patch>),
// Kubernetes' example aggregated API server (wardle.example.com: flunders, fischers).
// StartSample runs it as a process on an etcd of its own, with a serving certificate
// of a CA made for it (Sample.CA, an APIService's caBundle), against a host API server:
// it reads the host's kube-system/extension-apiserver-authentication, delegates tokens
// to TokenReview and authorization to SubjectAccessReview, and watches namespaces and
// flowcontrol. Its admission plugins that watch admissionregistration.k8s.io are off.
// Behind a peer started with Options.Aggregation, an APIService reaches it through a
// Service and an EndpointSlice made by hand, which may not name loopback: HostIP.
//
//	s, err := kubepeer.StartSample(ctx, kubepeer.SampleOptions{Binary: bin, Dir: dir,
//		EtcdServers: urls, Kubeconfig: p.Kubeconfig, BindAddress: ip, Hosts: []string{"api.wardle.svc"}})
//	defer s.Stop()
//
// OpenAPIRecording is the form of what TestRecordOpenAPI records of a peer's OpenAPI
// documents and kubectl explain, and ModelDigests and DefinitionDigests the digests
// both the recorder and the e2e suite's check compute.
//
// The package knows Kubernetes' command line, not Concord's: it must not import
// Concord's packages, so that the peer is set up as any Kubernetes user would.
package kubepeer
