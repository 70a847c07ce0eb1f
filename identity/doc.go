// Package identity names API servers and keeps their identity leases. Every server
// sharing an etcd has an ID that is stable across its restarts and distinct from its
// peers' (DefaultServerID); it names the server's identity Lease and its entries in
// StorageVersion objects.
//
// The identity lease (Lease) is a coordination.k8s.io/v1 Lease in kube-system named by
// the ID, held by "<id>_<uuid>" with a new uuid per process, labelled
// apiserver.kubernetes.io/identity=kube-apiserver and kubernetes.io/hostname and with
// the server's binary, emulation and minimum compatibility versions (the labels of
// package wire: concord.io/emulation-version and the others), annotated with where it
// serves (concord.io/endpoint, the advertise address and port), and renewed
// every RenewInterval. A lease deleted while the server runs is recreated at once; a
// lease lost for a while (deleted, or expired while the server was cut off) is
// reported through Config.Lapsed, so that what peers may have collected meanwhile is
// registered again. Valid tells whether the lease, as last renewed, still stands.
//
// CheckJoin refuses a server whose release is below the minimum compatibility version
// any Concord server's lease announces (expired leases and its own earlier one count):
// those servers may have stored what that release would drop. It only reads, and runs
// before the server writes anything.
//
// The package writes only its own lease, through the object store. Collecting expired
// leases of other servers, and of controller managers (IsComponentLease), is the
// garbage collector's job (package storageversion); it uses IsIdentityLease,
// IsComponentLease and Expired from here.
//
// Feature is the package's server wiring: NewFeature builds the lease and the
// informer of every server's identity lease (which the storage versions, the
// kubernetes Service and the aggregator read), and Start starts them.
package identity
