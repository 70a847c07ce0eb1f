package identity

import (
	"time"

	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// IsIdentityLease reports whether lease (a coordination.k8s.io Lease in any version,
// as unstructured) is a server identity lease: it lives in Namespace and carries
// LabelIdentity, whatever the kind of server.
func IsIdentityLease(lease *unstructured.Unstructured) bool {
	if lease.GetNamespace() != Namespace {
		return false
	}
	_, ok := lease.GetLabels()[LabelIdentity]
	return ok
}

// IsComponentLease reports whether lease is the identity lease of any component: a
// server's (IsIdentityLease) or a controller manager's (labelled
// wire.LabelControllerIdentity, kept by package identity/clientlease). Expired ones
// are the storage version garbage collector's to delete.
func IsComponentLease(lease *unstructured.Unstructured) bool {
	if IsIdentityLease(lease) {
		return true
	}
	_, ok := lease.GetLabels()[wire.LabelControllerIdentity]
	return lease.GetNamespace() == Namespace && ok
}

// ExpiresAt returns when lease expires: spec.renewTime (or acquireTime) plus
// spec.leaseDurationSeconds. ok is false when the lease lacks either, in which case it
// never expires by itself.
func ExpiresAt(lease *unstructured.Unstructured) (at time.Time, ok bool) {
	secs, found, _ := unstructured.NestedInt64(lease.Object, "spec", "leaseDurationSeconds")
	if !found || secs <= 0 {
		return time.Time{}, false
	}
	var stamp string
	for _, f := range []string{"renewTime", "acquireTime"} {
		if s, ok, _ := unstructured.NestedString(lease.Object, "spec", f); ok && s != "" {
			stamp = s
			break
		}
	}
	if stamp == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return time.Time{}, false
	}
	return t.Add(time.Duration(secs) * time.Second), true
}

// Expired reports whether lease has expired at now (see ExpiresAt).
func Expired(lease *unstructured.Unstructured, now time.Time) bool {
	at, ok := ExpiresAt(lease)
	return ok && !now.Before(at)
}
