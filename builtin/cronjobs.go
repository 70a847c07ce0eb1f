package builtin

import (
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var cronJobsGR = schema.GroupResource{Group: "batch", Resource: "cronjobs"}

// configureCronJobs gives CronJobs Kubernetes' legacy garbage collection default:
// deleted through batch/v1beta1 (served up to release 1.24) they orphan their
// dependents unless the request asks otherwise, as they did for the clients of that
// version; through batch/v1 they delete them in the background.
func configureCronJobs(res *registry.Resource) error {
	res.GarbageCollection.OrphanByDefault = []string{"v1beta1"}
	return nil
}
