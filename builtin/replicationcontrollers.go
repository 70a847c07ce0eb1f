package builtin

import (
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var replicationControllersGR = schema.GroupResource{Resource: "replicationcontrollers"}

// configureReplicationControllers gives ReplicationControllers core/v1's legacy
// garbage collection default, which kube's strategy keeps for compatibility: one
// deleted without a propagation policy orphans its pods. Their defaults and
// validation are Kubernetes' (package kubesemantics). No controller runs them.
func configureReplicationControllers(res *registry.Resource) error {
	res.GarbageCollection.OrphanByDefault = []string{"v1"}
	return nil
}
