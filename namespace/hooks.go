package namespace

import (
	"context"
	"slices"

	"github.com/concordproject/concord/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FinalizerKubernetes is the spec.finalizers entry that holds a namespace back while
// its content is deleted.
const FinalizerKubernetes = "kubernetes"

// Phases of a namespace (status.phase).
const (
	PhaseActive      = "Active"
	PhaseTerminating = "Terminating"
)

// GroupResource is core/v1 namespaces.
var GroupResource = schema.GroupResource{Resource: "namespaces"}

// Configure gives res, the namespaces resource, its behaviour (the hooks of package
// doc).
func Configure(res *registry.Resource) error {
	res.Hooks = hooks()
	return nil
}

// hooks returns the registry hooks of core/v1 namespaces.
func hooks() *registry.Hooks {
	return &registry.Hooks{
		ValidateName: apimachineryvalidation.ValidateNamespaceName,
		PrepareForCreate: func(_ context.Context, obj *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(obj.Object, PhaseActive, "status", "phase")
			fins := specFinalizers(obj)
			if !slices.Contains(fins, FinalizerKubernetes) {
				fins = append(fins, FinalizerKubernetes)
			}
			_ = unstructured.SetNestedStringSlice(obj.Object, fins, "spec", "finalizers")
		},
		PrepareForUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) {
			// The phase is the server's to set.
			phase, _, _ := unstructured.NestedString(old.Object, "status", "phase")
			_ = unstructured.SetNestedField(obj.Object, phase, "status", "phase")
			// spec.finalizers may only shrink, and only through /finalize or while
			// terminating; otherwise they are kept.
			if old.GetDeletionTimestamp() == nil {
				_ = unstructured.SetNestedStringSlice(obj.Object, specFinalizers(old), "spec", "finalizers")
			}
		},
		PrepareForDelete: func(_ context.Context, obj *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(obj.Object, PhaseTerminating, "status", "phase")
		},
		PendingDeletion: func(obj *unstructured.Unstructured) bool {
			return len(specFinalizers(obj)) > 0
		},
		AdmitDelete: func(_ context.Context, obj *unstructured.Unstructured) error {
			if slices.Contains(Immortal, obj.GetName()) {
				return apierrors.NewForbidden(GroupResource, obj.GetName(), errImmortal)
			}
			return nil
		},
	}
}

func specFinalizers(obj *unstructured.Unstructured) []string {
	fins, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers")
	return fins
}
