// Package auth owns who may talk to a Concord API server and what they may do.
//
// It owns:
//
//   - the cluster credentials: one certificate authority and one admin bearer token shared
//     by every server of a cluster, kept in etcd so that a single kubeconfig reaches any
//     server (only the server URL differs);
//   - serving certificates signed by that CA;
//   - bearer-token authentication (a static token file, the admin token and a per-process
//     loopback token) and the HTTP filter that puts the User into the request context;
//   - authorization: the modes of --authorization-mode (RBAC, whose authorizer package
//     rbac provides; AuthenticatedRead, Concord's first model; AlwaysAllow; AlwaysDeny)
//     behind the allowances Kubernetes always makes (system:masters may do anything;
//     anyone may read the health paths), and the answers of the access reviews
//     (SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview,
//     SelfSubjectRulesReview, SelfSubjectReview);
//   - kubeconfig files and rest.Configs for clients of the cluster.
//
// It does not own the handler chain (package server decides where the filters go and which
// paths are public), request parsing into Attributes (the server's request info does that),
// RBAC (package rbac), nor how the etcd client is built (package etcd). It must not import
// server, registry or rbac.
//
// # Trust boundary
//
// The credentials record in etcd holds the CA private key and the admin token in clear
// text: anyone who can read that etcd key is cluster admin. This is the same boundary as in
// Kubernetes, where etcd access already means control of every object.
//
// # Starting a server
//
//	creds, err := auth.EnsureClusterCredentials(ctx, etcdClient, prefix+"/concord/credentials", certDir)
//	certFile, keyFile, err := auth.EnsureServingCert(certDir, creds, []string{bindAddr, "127.0.0.1", "::1", "localhost", hostname})
//	fileTokens, err := auth.LoadTokenFile(tokenFile) // optional
//	loopback := auth.NewLoopbackToken()
//	authn, err := auth.NewTokenAuthenticator(fileTokens, creds.AdminToken, loopback)
//	user, ok := authn.AuthenticateRequest(r) // the chain's authentication filter
//	authz, err := auth.NewAuthorization([]string{auth.ModeRBAC}, rbacAuthorizer)
//	// later in the chain, once the request's attributes are known:
//	if ok, reason := auth.Decide(ctx, authz, attrs); !ok {
//		// write auth.Forbidden(attrs, reason) as a Status
//	}
//	err = auth.WriteKubeconfig(path, "https://127.0.0.1:6443", creds.CACert, creds.AdminToken, "concord")
//	cfg := auth.RESTConfig("https://127.0.0.1:6443", creds.CACert, loopback) // in-process clients
//
// Secrets (tokens, private keys) never appear in errors or logs produced by this package.
package auth
