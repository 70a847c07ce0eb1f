package namespace

import (
	"context"
	"slices"

	"github.com/concordproject/concord/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FinalizerKubernetes is the spec.finalizers entry that holds a namespace back while
// its content is deleted.
const FinalizerKubernetes = "kubernetes"

// Finalize is the subresource that writes a namespace's spec.finalizers (an update of
// the main resource keeps them).
const Finalize = "finalize"

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

// hooks returns the registry hooks of core/v1 namespaces: what Kubernetes'
// namespace storage does beyond the strategy (package kubesemantics gives them their
// phase and finalizer on creation, their validation, and the rules of updates and of
// the finalize subresource).
func hooks() *registry.Hooks {
	return &registry.Hooks{
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
