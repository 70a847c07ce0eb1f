package priorityclass

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/concordproject/concord/registry"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// ErrStorageVersion means PriorityClasses are stored in a version other than v1, the
// one the hooks read.
var ErrStorageVersion = errors.New("PriorityClasses must be stored in v1")

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

// isSystemClass reports whether a class of that name, value and globalDefault is a
// system class, and if not, why (Kubernetes' words).
func isSystemClass(name string, value int32, globalDefault bool) error {
	for _, c := range SystemClasses() {
		if c.Name != name {
			continue
		}
		if c.Value != value {
			return fmt.Errorf("value of %s PriorityClass must be %d", c.Name, c.Value)
		}
		if c.GlobalDefault != globalDefault {
			return fmt.Errorf("globalDefault of %s PriorityClass must be %t", c.Name, c.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%s is not a known system priority class", name)
}

// Configure gives PriorityClasses Kubernetes' validation and keeps the system classes
// from being deleted.
func Configure(res *registry.Resource) error {
	if res.StorageVersion != "v1" {
		return fmt.Errorf("%w: stored in %s", ErrStorageVersion, res.StorageVersion)
	}
	res.Hooks = &registry.Hooks{
		Validate: func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
			pc, errs := typed(obj)
			if errs != nil {
				return errs
			}
			return validate(pc)
		},
		ValidateUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
			pc, errs := typed(obj)
			if errs != nil {
				return errs
			}
			was, errs := typed(old)
			if errs != nil {
				return errs
			}
			return validateUpdate(pc, was)
		},
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

// validate is Kubernetes' ValidatePriorityClass, but for the metadata, which the
// registry validates.
func validate(pc *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, SystemPrefix) {
		if err := isSystemClass(pc.Name, pc.Value, pc.GlobalDefault); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+SystemPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"),
			fmt.Sprintf("maximum allowed value of a user defined priority is %d", HighestUserDefinablePriority)))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p,
			[]string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return errs
}

// validateUpdate is Kubernetes' ValidatePriorityClassUpdate: value and
// preemptionPolicy do not change.
func validateUpdate(pc, old *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if pc.Value != old.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(pc.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	return errs
}

// typed converts a PriorityClass in v1 to its Go type.
func typed(obj *unstructured.Unstructured) (*schedulingv1.PriorityClass, field.ErrorList) {
	pc := &schedulingv1.PriorityClass{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pc); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath(""), nil, err.Error())}
	}
	return pc, nil
}
