package differential

import (
	"strings"
)

// verbs says which requests a resource serves.
type verbs int

const (
	full       verbs = iota // create, get, update, patch (and more)
	createOnly              // create alone (reviews, bindings)
	readOnly                // get and list alone
)

// resource is one built-in resource kube-apiserver 1.37.2 serves (its discovery,
// subresources left out).
type resource struct {
	group string
	// versions are the served versions, the preferred one first.
	versions   []string
	name, kind string
	namespaced bool
	verbs      verbs
	// since is the release that first serves it, when after the oldest emulated one.
	since string
}

// resources are every resource of kube-apiserver 1.37.2's discovery.
var resources = []resource{
	{group: "", versions: []string{"v1"}, name: "bindings", kind: "Binding", namespaced: true, verbs: createOnly},
	{group: "", versions: []string{"v1"}, name: "componentstatuses", kind: "ComponentStatus", namespaced: false, verbs: readOnly},
	{group: "", versions: []string{"v1"}, name: "configmaps", kind: "ConfigMap", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "endpoints", kind: "Endpoints", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "events", kind: "Event", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "limitranges", kind: "LimitRange", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "namespaces", kind: "Namespace", namespaced: false, verbs: full},
	{group: "", versions: []string{"v1"}, name: "nodes", kind: "Node", namespaced: false, verbs: full},
	{group: "", versions: []string{"v1"}, name: "persistentvolumeclaims", kind: "PersistentVolumeClaim", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "persistentvolumes", kind: "PersistentVolume", namespaced: false, verbs: full},
	{group: "", versions: []string{"v1"}, name: "pods", kind: "Pod", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "podtemplates", kind: "PodTemplate", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "replicationcontrollers", kind: "ReplicationController", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "resourcequotas", kind: "ResourceQuota", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "secrets", kind: "Secret", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "serviceaccounts", kind: "ServiceAccount", namespaced: true, verbs: full},
	{group: "", versions: []string{"v1"}, name: "services", kind: "Service", namespaced: true, verbs: full},
	{group: "admissionregistration.k8s.io", versions: []string{"v1"}, name: "mutatingadmissionpolicies", kind: "MutatingAdmissionPolicy", namespaced: false, verbs: full},
	{group: "admissionregistration.k8s.io", versions: []string{"v1"}, name: "mutatingadmissionpolicybindings", kind: "MutatingAdmissionPolicyBinding", namespaced: false, verbs: full},
	{group: "admissionregistration.k8s.io", versions: []string{"v1"}, name: "mutatingwebhookconfigurations", kind: "MutatingWebhookConfiguration", namespaced: false, verbs: full},
	{group: "admissionregistration.k8s.io", versions: []string{"v1"}, name: "validatingadmissionpolicies", kind: "ValidatingAdmissionPolicy", namespaced: false, verbs: full},
	{group: "admissionregistration.k8s.io", versions: []string{"v1"}, name: "validatingadmissionpolicybindings", kind: "ValidatingAdmissionPolicyBinding", namespaced: false, verbs: full},
	{group: "admissionregistration.k8s.io", versions: []string{"v1"}, name: "validatingwebhookconfigurations", kind: "ValidatingWebhookConfiguration", namespaced: false, verbs: full},
	{group: "apiextensions.k8s.io", versions: []string{"v1"}, name: "customresourcedefinitions", kind: "CustomResourceDefinition", namespaced: false, verbs: full},
	{group: "apiregistration.k8s.io", versions: []string{"v1"}, name: "apiservices", kind: "APIService", namespaced: false, verbs: full},
	{group: "apps", versions: []string{"v1"}, name: "controllerrevisions", kind: "ControllerRevision", namespaced: true, verbs: full},
	{group: "apps", versions: []string{"v1"}, name: "daemonsets", kind: "DaemonSet", namespaced: true, verbs: full},
	{group: "apps", versions: []string{"v1"}, name: "deployments", kind: "Deployment", namespaced: true, verbs: full},
	{group: "apps", versions: []string{"v1"}, name: "replicasets", kind: "ReplicaSet", namespaced: true, verbs: full},
	{group: "apps", versions: []string{"v1"}, name: "statefulsets", kind: "StatefulSet", namespaced: true, verbs: full},
	{group: "authentication.k8s.io", versions: []string{"v1"}, name: "selfsubjectreviews", kind: "SelfSubjectReview", namespaced: false, verbs: createOnly},
	{group: "authentication.k8s.io", versions: []string{"v1"}, name: "tokenreviews", kind: "TokenReview", namespaced: false, verbs: createOnly},
	{group: "authorization.k8s.io", versions: []string{"v1"}, name: "localsubjectaccessreviews", kind: "LocalSubjectAccessReview", namespaced: true, verbs: createOnly},
	{group: "authorization.k8s.io", versions: []string{"v1"}, name: "selfsubjectaccessreviews", kind: "SelfSubjectAccessReview", namespaced: false, verbs: createOnly},
	{group: "authorization.k8s.io", versions: []string{"v1"}, name: "selfsubjectrulesreviews", kind: "SelfSubjectRulesReview", namespaced: false, verbs: createOnly},
	{group: "authorization.k8s.io", versions: []string{"v1"}, name: "subjectaccessreviews", kind: "SubjectAccessReview", namespaced: false, verbs: createOnly},
	{group: "autoscaling", versions: []string{"v2", "v1"}, name: "horizontalpodautoscalers", kind: "HorizontalPodAutoscaler", namespaced: true, verbs: full},
	{group: "batch", versions: []string{"v1"}, name: "cronjobs", kind: "CronJob", namespaced: true, verbs: full},
	{group: "batch", versions: []string{"v1"}, name: "jobs", kind: "Job", namespaced: true, verbs: full},
	{group: "certificates.k8s.io", versions: []string{"v1"}, name: "certificatesigningrequests", kind: "CertificateSigningRequest", namespaced: false, verbs: full},
	{group: "certificates.k8s.io", versions: []string{"v1"}, name: "clustertrustbundles", kind: "ClusterTrustBundle", namespaced: false, verbs: full, since: "1.37"},
	{group: "certificates.k8s.io", versions: []string{"v1"}, name: "podcertificaterequests", kind: "PodCertificateRequest", namespaced: true, verbs: full, since: "1.37"},
	{group: "coordination.k8s.io", versions: []string{"v1"}, name: "leases", kind: "Lease", namespaced: true, verbs: full},
	{group: "discovery.k8s.io", versions: []string{"v1"}, name: "endpointslices", kind: "EndpointSlice", namespaced: true, verbs: full},
	{group: "events.k8s.io", versions: []string{"v1"}, name: "events", kind: "Event", namespaced: true, verbs: full},
	{group: "flowcontrol.apiserver.k8s.io", versions: []string{"v1"}, name: "flowschemas", kind: "FlowSchema", namespaced: false, verbs: full},
	{group: "flowcontrol.apiserver.k8s.io", versions: []string{"v1"}, name: "prioritylevelconfigurations", kind: "PriorityLevelConfiguration", namespaced: false, verbs: full},
	{group: "networking.k8s.io", versions: []string{"v1"}, name: "ingressclasses", kind: "IngressClass", namespaced: false, verbs: full},
	{group: "networking.k8s.io", versions: []string{"v1"}, name: "ingresses", kind: "Ingress", namespaced: true, verbs: full},
	{group: "networking.k8s.io", versions: []string{"v1"}, name: "ipaddresses", kind: "IPAddress", namespaced: false, verbs: full},
	{group: "networking.k8s.io", versions: []string{"v1"}, name: "networkpolicies", kind: "NetworkPolicy", namespaced: true, verbs: full},
	{group: "networking.k8s.io", versions: []string{"v1"}, name: "servicecidrs", kind: "ServiceCIDR", namespaced: false, verbs: full},
	{group: "node.k8s.io", versions: []string{"v1"}, name: "runtimeclasses", kind: "RuntimeClass", namespaced: false, verbs: full},
	{group: "policy", versions: []string{"v1"}, name: "poddisruptionbudgets", kind: "PodDisruptionBudget", namespaced: true, verbs: full},
	{group: "rbac.authorization.k8s.io", versions: []string{"v1"}, name: "clusterrolebindings", kind: "ClusterRoleBinding", namespaced: false, verbs: full},
	{group: "rbac.authorization.k8s.io", versions: []string{"v1"}, name: "clusterroles", kind: "ClusterRole", namespaced: false, verbs: full},
	{group: "rbac.authorization.k8s.io", versions: []string{"v1"}, name: "rolebindings", kind: "RoleBinding", namespaced: true, verbs: full},
	{group: "rbac.authorization.k8s.io", versions: []string{"v1"}, name: "roles", kind: "Role", namespaced: true, verbs: full},
	{group: "resource.k8s.io", versions: []string{"v1"}, name: "deviceclasses", kind: "DeviceClass", namespaced: false, verbs: full},
	{group: "resource.k8s.io", versions: []string{"v1"}, name: "devicetaintrules", kind: "DeviceTaintRule", namespaced: false, verbs: full, since: "1.37"},
	{group: "resource.k8s.io", versions: []string{"v1"}, name: "resourceclaims", kind: "ResourceClaim", namespaced: true, verbs: full},
	{group: "resource.k8s.io", versions: []string{"v1"}, name: "resourceclaimtemplates", kind: "ResourceClaimTemplate", namespaced: true, verbs: full},
	{group: "resource.k8s.io", versions: []string{"v1"}, name: "resourceslices", kind: "ResourceSlice", namespaced: false, verbs: full},
	{group: "scheduling.k8s.io", versions: []string{"v1"}, name: "priorityclasses", kind: "PriorityClass", namespaced: false, verbs: full},
	{group: "storage.k8s.io", versions: []string{"v1"}, name: "csidrivers", kind: "CSIDriver", namespaced: false, verbs: full},
	{group: "storage.k8s.io", versions: []string{"v1"}, name: "csinodes", kind: "CSINode", namespaced: false, verbs: full},
	{group: "storage.k8s.io", versions: []string{"v1"}, name: "csistoragecapacities", kind: "CSIStorageCapacity", namespaced: true, verbs: full},
	{group: "storage.k8s.io", versions: []string{"v1"}, name: "storageclasses", kind: "StorageClass", namespaced: false, verbs: full},
	{group: "storage.k8s.io", versions: []string{"v1"}, name: "volumeattachments", kind: "VolumeAttachment", namespaced: false, verbs: full},
	{group: "storage.k8s.io", versions: []string{"v1"}, name: "volumeattributesclasses", kind: "VolumeAttributesClass", namespaced: false, verbs: full},
	{group: "storagemigration.k8s.io", versions: []string{"v1"}, name: "storageversionmigrations", kind: "StorageVersionMigration", namespaced: false, verbs: full, since: "1.37"},
}

// globalKinds are the kinds whose objects act on requests of every namespace (admission,
// flow control, defaults picked by admission, aggregation, new resources, quota): their
// cases run after all others and delete what they created; those of the kinds
// serialKinds names one at a time.
var globalKinds = map[string]bool{
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true,
	"FlowSchema": true, "PriorityLevelConfiguration": true, "APIService": true,
	"CustomResourceDefinition": true, "PriorityClass": true, "StorageClass": true,
	"IngressClass": true, "ServiceCIDR": true, "ResourceQuota": true,
}

// serialKinds are the global kinds whose objects act on one another: a single
// default class, overlapping ranges, quotas of one namespace.
var serialKinds = map[string]bool{
	"PriorityClass": true, "StorageClass": true, "IngressClass": true, "ServiceCIDR": true, "ResourceQuota": true,
}

// gv is the resource's group-version path prefix for version v.
func (r resource) gv(v string) string {
	if r.group == "" {
		return "/api/" + v
	}
	return "/apis/" + r.group + "/" + v
}

// id names the resource in case ids: group/resource (core/resource for the core group).
func (r resource) id() string {
	g := r.group
	if g == "" {
		g = "core"
	}
	return g + "/" + r.name
}

// namespace is the namespace of the resource's cases ("" when cluster-scoped).
func (r resource) namespace() string {
	if !r.namespaced {
		return ""
	}
	g := r.group
	if g == "" {
		g = "core"
	}
	return "d-" + r.name + "-" + strings.Split(g, ".")[0]
}

// collection is the path of the resource's collection in version v.
func (r resource) collection(v string) string {
	if r.namespaced {
		return r.gv(v) + "/namespaces/" + r.namespace() + "/" + r.name
	}
	return r.gv(v) + "/" + r.name
}

// byKind finds the resource of an apiVersion and kind; false when none is served.
func byKind(apiVersion, kind string) (resource, bool) {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		group = ""
	}
	for _, r := range resources {
		if r.kind == kind && r.group == group {
			return r, true
		}
	}
	return resource{}, false
}
