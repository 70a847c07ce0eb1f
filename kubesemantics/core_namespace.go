package kubesemantics

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// finalizeSubresource is the namespace subresource that writes spec.finalizers.
const finalizeSubresource = "finalize"

// coreNamespaceKinds are the strategies of Namespaces and of what bounds a namespace's
// use: ResourceQuotas and LimitRanges.
func coreNamespaceKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Resource: "namespaces"}: kind[*core.Namespace]{
			prepareCreate: func(_ context.Context, ns *core.Namespace) {
				ns.Status = core.NamespaceStatus{Phase: core.NamespaceActive}
				requireKubernetesFinalizer(ns)
			},
			validate: func(_ context.Context, ns *core.Namespace) field.ErrorList {
				return corevalidation.ValidateNamespace(ns)
			},
			prepareUpdate:  prepareNamespaceUpdate,
			validateUpdate: validateNamespaceUpdate,
			prepareStatus:  func(_ context.Context, ns, old *core.Namespace) { ns.Spec = old.Spec },
			validateStatus: func(_ context.Context, ns, old *core.Namespace) field.ErrorList {
				return corevalidation.ValidateNamespaceStatusUpdate(ns, old)
			},
			canonicalize: nameLabel,
		}.erase(),
		{Resource: "resourcequotas"}: kind[*core.ResourceQuota]{
			prepareCreate: func(_ context.Context, q *core.ResourceQuota) { q.Status = core.ResourceQuotaStatus{} },
			validate: func(_ context.Context, q *core.ResourceQuota) field.ErrorList {
				return corevalidation.ValidateResourceQuota(q)
			},
			warnCreate:    func(_ context.Context, q *core.ResourceQuota) []string { return quotaRequestWarnings(q) },
			prepareUpdate: func(_ context.Context, q, old *core.ResourceQuota) { q.Status = old.Status },
			validateUpdate: func(_ context.Context, q, old *core.ResourceQuota) field.ErrorList {
				return corevalidation.ValidateResourceQuotaUpdate(q, old)
			},
			prepareStatus: func(_ context.Context, q, old *core.ResourceQuota) { q.Spec = old.Spec },
			validateStatus: func(_ context.Context, q, old *core.ResourceQuota) field.ErrorList {
				return corevalidation.ValidateResourceQuotaStatusUpdate(q, old)
			},
		}.erase(),
		{Resource: "limitranges"}: kind[*core.LimitRange]{
			prepareCreate: func(_ context.Context, l *core.LimitRange) {
				// A LimitRange may be created without a name: it gets a unique one.
				if l.Name == "" {
					l.Name = string(uuid.NewUUID())
				}
			},
			validate: func(_ context.Context, l *core.LimitRange) field.ErrorList {
				return corevalidation.ValidateLimitRange(l)
			},
			validateUpdate: func(_ context.Context, l, _ *core.LimitRange) field.ErrorList {
				return corevalidation.ValidateLimitRange(l)
			},
		}.erase(),
	}
}

// requireKubernetesFinalizer adds the "kubernetes" finalizer to a new namespace's
// spec.finalizers, which holds its deletion back until the namespace is empty.
func requireKubernetesFinalizer(ns *core.Namespace) {
	if !slices.Contains(ns.Spec.Finalizers, core.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, core.FinalizerKubernetes)
	}
}

// prepareNamespaceUpdate keeps the status, and the spec.finalizers unless the update
// is one of the finalize subresource, which writes them and nothing else of the spec
// that the namespace has (its spec is nothing but them).
func prepareNamespaceUpdate(ctx context.Context, ns, old *core.Namespace) {
	ns.Status = old.Status
	if requestSubresource(ctx) != finalizeSubresource {
		ns.Spec.Finalizers = old.Spec.Finalizers
	}
}

// validateNamespaceUpdate validates an update of a namespace, or of its finalizers
// through the finalize subresource.
func validateNamespaceUpdate(ctx context.Context, ns, old *core.Namespace) field.ErrorList {
	if requestSubresource(ctx) == finalizeSubresource {
		return corevalidation.ValidateNamespaceFinalizeUpdate(ns, old)
	}
	return append(corevalidation.ValidateNamespace(ns), corevalidation.ValidateNamespaceUpdate(ns, old)...)
}

// nameLabel labels a namespace with its name, once the name is final: a name generated
// from generateName is not known when the defaults (which label named namespaces) run.
func nameLabel(ns *core.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// quotaRequestWarnings warns of a ResourceQuota whose hard request of cpu, memory,
// storage or ephemeral storage exceeds its hard limit of the same resource (requests
// of cpu and memory may be written without the "requests." prefix).
func quotaRequestWarnings(q *core.ResourceQuota) []string {
	var out []string
	for _, r := range []core.ResourceName{core.ResourceCPU, core.ResourceMemory, core.ResourceStorage, core.ResourceEphemeralStorage} {
		requestName := core.ResourceName("requests." + string(r))
		request, ok := q.Spec.Hard[requestName]
		if !ok && (r == core.ResourceCPU || r == core.ResourceMemory) {
			if request, ok = q.Spec.Hard[r]; ok {
				requestName = r
			}
		}
		limitName := core.ResourceName("limits." + string(r))
		limit, limited := q.Spec.Hard[limitName]
		if ok && limited && request.Cmp(limit) > 0 {
			out = append(out, fmt.Sprintf("ResourceQuota %s (%s) should be less than %s (%s)", requestName, request.String(), limitName, limit.String()))
		}
	}
	return out
}
