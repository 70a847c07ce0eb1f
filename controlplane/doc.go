// Package controlplane assembles one complete Concord API server from its parts and
// owns the `concord server` command:
//
//  1. storage: an embedded etcd under <data-dir>/etcd, or an external cluster
//     (--etcd-servers);
//  2. credentials: the cluster CA and admin token shared through etcd (package auth),
//     this server's serving certificate, the static token file;
//  3. the registry of built-in resources (from the API catalog) and the object store;
//  4. the HTTP server (package server) with health checks, metrics and OpenAPI;
//  5. bootstrap (the default, kube-system and kube-public namespaces) and in-process
//     controllers (namespace lifecycle);
//  6. <data-dir>/admin.kubeconfig pointing at this server.
//
// It wires; it does not implement. Behaviour belongs to the packages it assembles.
package controlplane
