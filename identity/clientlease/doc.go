// Package clientlease keeps the identity lease of a component that reaches the API
// servers as a client: an aggregated API server (through package
// storageversion/publisher) or `concord controller-manager`. The lease is a
// coordination.k8s.io/v1 Lease in kube-system named by the component's ID, with the
// labels the component gives it (its kind, wire.LabelAPIServerIdentity or
// wire.LabelControllerIdentity, and its versions, wire.ComponentVersions.Labels),
// created or renewed by Renew, kept by Run every renew interval, deleted by Release.
//
// Concord's own servers keep theirs through the object store (package identity): they
// are the server, and must not depend on their own HTTP path. Both kinds of lease look
// alike to readers: the storage version garbage collector keeps an API server's
// entries while its lease lives, and the version skew controller (package
// versionskew) compares the versions of every component that has one.
//
// # What it must not touch
//
// It writes the component's own lease, nothing else, through the client it is given.
//
//	l, _ := clientlease.New(clientlease.Config{Client: cs, Name: id,
//		Labels: map[string]string{wire.LabelControllerIdentity: "controller-manager"}})
//	go l.Run(ctx) // renews until ctx is done, then deletes the lease
package clientlease
