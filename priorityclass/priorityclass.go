package priorityclass

import (
	"context"
	"errors"

	"github.com/concordproject/concord/registry"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// GroupResource is scheduling.k8s.io priorityclasses.
var GroupResource = schema.GroupResource{Group: schedulingv1.GroupName, Resource: "priorityclasses"}

// Kubernetes' priority bounds and the system classes' names.
const (
	// HighestUserDefinablePriority is the highest value of a class that is not a
	// system class.
	HighestUserDefinablePriority = int32(1000000000)
	// SystemCriticalPriority is the value of system-cluster-critical.
	SystemCriticalPriority = 2 * HighestUserDefinablePriority
	// SystemPrefix starts the names reserved to the system classes.
	SystemPrefix          = "system-"
	SystemClusterCritical = SystemPrefix + "cluster-critical"
	SystemNodeCritical    = SystemPrefix + "node-critical"
)

// errSystemClass is why a system class may not be deleted (Kubernetes' words).
var errSystemClass = errors.New("this is a system priority class and cannot be deleted")

// SystemClasses returns the system classes, as Kubernetes defines them.
func SystemClasses() []*schedulingv1.PriorityClass {
	class := func(name string, value int32, description string) *schedulingv1.PriorityClass {
		return &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, Description: description,
			PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
		}
	}
	return []*schedulingv1.PriorityClass{
		class(SystemNodeCritical, SystemCriticalPriority+1000, "Used for system critical pods that must not be moved from their current node."),
		class(SystemClusterCritical, SystemCriticalPriority, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
	}
}

// Configure keeps the system classes from being deleted, as kube-apiserver's storage
// of PriorityClasses does. Their validation is Kubernetes' own (package
// kubesemantics).
func Configure(res *registry.Resource) error {
	res.Hooks = &registry.Hooks{
		AdmitDelete: func(_ context.Context, obj *unstructured.Unstructured) error {
			for _, c := range SystemClasses() {
				if c.Name == obj.GetName() {
					return apierrors.NewForbidden(GroupResource, obj.GetName(), errSystemClass)
				}
			}
			return nil
		},
	}
	return nil
}
