package builtin

import (
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var leasesGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// configureLeases lets PUT create a missing Lease, as Kubernetes does (its
// strategy allows creation on update; the store decides it). The defaults and
// validation of Leases are Kubernetes' (package kubesemantics).
func configureLeases(res *registry.Resource) error {
	res.Hooks = &registry.Hooks{AllowCreateOnUpdate: true}
	return nil
}
