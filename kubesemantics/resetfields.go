package kubesemantics

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// resetFields are the fields kube-apiserver 1.37.2's strategies reset, per resource and
// subresource, where they are not the rule the server applies to any resource with a
// status subresource (the resource does not own status, its status neither spec nor
// metadata): what a write through the subresource may not own in managed fields.
//
// Most kinds' status writes keep metadata, so a manager that changes a label through
// status owns it; a Deployment's status keeps its labels, a Pod's its deletion
// timestamp and owner references. A CertificateSigningRequest's spec is the
// requester's, set once by the server, so no write owns it; its status owns the
// certificate, its approval the conditions.
var resetFields = func() map[schema.GroupResource]map[string]*fieldpath.Set {
	paths := func(ps ...fieldpath.Path) *fieldpath.Set { return fieldpath.NewSet(ps...) }
	spec := fieldpath.MakePathOrDie("spec")
	status := fieldpath.MakePathOrDie("status")
	statusKeepsMetadata := map[string]*fieldpath.Set{"status": paths(spec)}
	out := map[schema.GroupResource]map[string]*fieldpath.Set{
		{Group: "apps", Resource: "deployments"}: {"status": paths(spec, fieldpath.MakePathOrDie("metadata", "labels"))},
		{Resource: "pods"}: {"status": paths(spec,
			fieldpath.MakePathOrDie("metadata", "deletionTimestamp"), fieldpath.MakePathOrDie("metadata", "ownerReferences"))},
		{Resource: "namespaces"}: {"status": paths(spec), finalizeSubresource: paths(status)},
		{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: {
			"":         paths(spec, status),
			"status":   paths(spec, fieldpath.MakePathOrDie("status", "conditions")),
			"approval": paths(spec, fieldpath.MakePathOrDie("status", "certificate")),
		},
	}
	for _, gr := range []schema.GroupResource{
		{Group: "apps", Resource: "daemonsets"}, {Group: "apps", Resource: "replicasets"},
		{Group: "apps", Resource: "statefulsets"},
		{Group: "autoscaling", Resource: "horizontalpodautoscalers"},
		{Group: "batch", Resource: "cronjobs"}, {Group: "batch", Resource: "jobs"},
		{Resource: "nodes"}, {Resource: "persistentvolumes"}, {Resource: "persistentvolumeclaims"},
		{Resource: "replicationcontrollers"}, {Resource: "resourcequotas"}, {Resource: "services"},
		{Group: "networking.k8s.io", Resource: "ingresses"},
		{Group: "policy", Resource: "poddisruptionbudgets"},
	} {
		out[gr] = statusKeepsMetadata
	}
	return out
}()
