// Package controlplane assembles one complete Concord API server from its parts and
// owns the `concord server` command:
//
//  1. storage: an embedded etcd under <data-dir>/etcd, or an external cluster
//     (--etcd-servers);
//  2. credentials: the cluster CA and admin token shared through etcd (package auth),
//     this server's serving certificate, the static token file;
//  3. the compatibility configuration (KEP-4330: binary, emulation and minimum
//     compatibility versions, feature gates, runtime config), the registry of built-in
//     resources it selects from the API catalog, and the object store;
//  4. the HTTP server (package server) with health checks, metrics and OpenAPI;
//  5. bootstrap (the default, kube-system, kube-public and kube-node-lease
//     namespaces) and in-process controllers: namespace lifecycle, and the
//     CustomResourceDefinition controller that serves every stored CRD (start-up
//     waits until it has);
//  6. <data-dir>/admin.kubeconfig pointing at this server.
//
// It wires; it does not implement. Behaviour belongs to the packages it assembles.
package controlplane
