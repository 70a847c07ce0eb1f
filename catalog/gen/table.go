package main

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1alpha1 "k8s.io/api/authentication/v1alpha1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	nodev1 "k8s.io/api/node/v1"
	nodev1beta1 "k8s.io/api/node/v1beta1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
	"k8s.io/utils/ptr"
)

// oldestRelease is the first release the catalog describes. Releases run from it to
// the release of the k8s.io/api module the generator is built with.
const oldestRelease = "1.20"

// resourceSpec is one resource of the catalog.
type resourceSpec struct {
	group, plural string
	namespaced    bool
	shortNames    []string
	categories    []string
	columns       []apiextensionsv1.CustomResourceColumnDefinition
	// scale, if set, is the resource's scale subresource.
	scale    *apiextensionsv1.CustomResourceSubresourceScale
	versions []versionSpec
}

// versionSpec is one version of a resource: its Go type in k8s.io/api, or, for a version
// whose type has been deleted from k8s.io/api, the facts of its history and the version
// whose schema stands in for its own.
type versionSpec struct {
	name string
	// obj is a pointer to the version's Go type; nil if the type is gone.
	obj any
	// history, when set, replaces what the Go type says (or cannot say) about the
	// version's lifecycle.
	history *history
	// schemaOf names the version whose schema a version without a Go type reuses.
	schemaOf string
}

// history is a version's lifecycle recorded by hand, with where it comes from.
type history struct {
	introduced, deprecated, removed string
	replacement                     string
	source                          string
}

// resources is the content of the default catalog. Lifecycles come from the Go types'
// APILifecycle* methods (their zz_generated.prerelease-lifecycle.go); the few versions
// whose types k8s.io/api no longer has carry a history, citing its source.
var resources = append([]resourceSpec{
	{
		group: "", plural: "namespaces", shortNames: []string{"ns"},
		columns:  []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Status", Type: "string", JSONPath: ".status.phase"}},
		versions: []versionSpec{{name: "v1", obj: &corev1.Namespace{}}},
	},
	{
		group: "", plural: "configmaps", namespaced: true, shortNames: []string{"cm"},
		versions: []versionSpec{{name: "v1", obj: &corev1.ConfigMap{}}},
	},
	// Secrets: builtin gives them Kubernetes' behaviour (stringData, the types' keys,
	// immutability); readable only with a grant (RBAC's view role has none).
	{
		group: "", plural: "secrets", namespaced: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Type", Type: "string", JSONPath: ".type"},
			{Name: "Data", Type: "integer", JSONPath: ".data"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.Secret{}}},
	},
	// Service accounts: builtin issues their tokens (TokenRequest, the token
	// subresource); package serviceaccount signs and authenticates them.
	{
		group: "", plural: "serviceaccounts", namespaced: true, shortNames: []string{"sa"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Secrets", Type: "integer", JSONPath: ".secrets"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.ServiceAccount{}}},
	},
	// Resource quotas: package quota enforces them (admission) and keeps their status
	// (its usage controller). REQUEST and LIMIT are computed by its table hook.
	{
		group: "", plural: "resourcequotas", namespaced: true, shortNames: []string{"quota"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Request", Type: "string", JSONPath: ".status.hard"},
			{Name: "Limit", Type: "string", JSONPath: ".status.hard"},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.ResourceQuota{}}},
	},
	// Services and EndpointSlices as data: there are no pods, so nothing allocates
	// cluster IPs or fills the slices; users write the endpoints (host and port), and
	// package aggregator resolves an APIService's service through them.
	{
		group: "", plural: "services", namespaced: true, shortNames: []string{"svc"}, categories: []string{"all"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Type", Type: "string", JSONPath: ".spec.type"},
			{Name: "Cluster-IP", Type: "string", JSONPath: ".spec.clusterIP"},
			{Name: "External-IP", Type: "string", JSONPath: ".spec.externalIPs"},
			{Name: "Port(s)", Type: "string", JSONPath: ".spec.ports[*].port"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.Service{}}},
	},
	{
		group: "discovery.k8s.io", plural: "endpointslices", namespaced: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "AddressType", Type: "string", JSONPath: ".addressType"},
			{Name: "Ports", Type: "string", JSONPath: ".ports[*].port"},
			{Name: "Endpoints", Type: "string", JSONPath: ".endpoints[*].addresses[0]"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &discoveryv1.EndpointSlice{}},
			{name: "v1beta1", obj: &discoveryv1beta1.EndpointSlice{}},
		},
	},
	// APIServices: package aggregator validates them, keeps their Available condition
	// and proxies the group-versions they register to their backends.
	{
		group: "apiregistration.k8s.io", plural: "apiservices", categories: []string{"api-extensions"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Service", Type: "string", JSONPath: ".spec.service.name"},
			{Name: "Available", Type: "string", JSONPath: `.status.conditions[?(@.type=="Available")].status`},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &apiregistrationv1.APIService{}},
			{name: "v1beta1", obj: &apiregistrationv1beta1.APIService{}},
		},
	},
	// Pod templates as data, as in Kubernetes (no controller reads them).
	{
		group: "", plural: "podtemplates", namespaced: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Containers", Type: "string", JSONPath: ".template.spec.containers[*].name"},
			{Name: "Images", Type: "string", JSONPath: ".template.spec.containers[*].image"},
			{Name: "Pod Labels", Type: "string", JSONPath: ".template.metadata.labels"},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.PodTemplate{}}},
	},
	// RBAC: package rbac enforces the roles and bindings (the authorizer, the
	// escalation and bind checks) and validates them; rbac/bootstrap creates the
	// default roles and aggregates ClusterRoles.
	{
		group: "rbac.authorization.k8s.io", plural: "roles", namespaced: true,
		columns:  []apiextensionsv1.CustomResourceColumnDefinition{createdAt},
		versions: rbacVersions(&rbacv1.Role{}, &rbacv1beta1.Role{}),
	},
	{
		group: "rbac.authorization.k8s.io", plural: "clusterroles",
		columns:  []apiextensionsv1.CustomResourceColumnDefinition{createdAt},
		versions: rbacVersions(&rbacv1.ClusterRole{}, &rbacv1beta1.ClusterRole{}),
	},
	{
		group: "rbac.authorization.k8s.io", plural: "rolebindings", namespaced: true,
		columns:  bindingColumns,
		versions: rbacVersions(&rbacv1.RoleBinding{}, &rbacv1beta1.RoleBinding{}),
	},
	{
		group: "rbac.authorization.k8s.io", plural: "clusterrolebindings",
		columns:  bindingColumns,
		versions: rbacVersions(&rbacv1.ClusterRoleBinding{}, &rbacv1beta1.ClusterRoleBinding{}),
	},
	// Reviews: created and answered, never stored (builtin gives them their answers).
	{
		group: "authentication.k8s.io", plural: "tokenreviews",
		versions: []versionSpec{
			{name: "v1", obj: &authenticationv1.TokenReview{}},
			{name: "v1beta1", obj: &authenticationv1beta1.TokenReview{}},
		},
	},
	{
		group: "authentication.k8s.io", plural: "selfsubjectreviews",
		versions: []versionSpec{
			{name: "v1", obj: &authenticationv1.SelfSubjectReview{}},
			{name: "v1beta1", obj: &authenticationv1beta1.SelfSubjectReview{}},
			{name: "v1alpha1", obj: &authenticationv1alpha1.SelfSubjectReview{}},
		},
	},
	{
		group: "authorization.k8s.io", plural: "subjectaccessreviews",
		versions: []versionSpec{
			{name: "v1", obj: &authorizationv1.SubjectAccessReview{}},
			{name: "v1beta1", obj: &authorizationv1beta1.SubjectAccessReview{}},
		},
	},
	{
		group: "authorization.k8s.io", plural: "selfsubjectaccessreviews",
		versions: []versionSpec{
			{name: "v1", obj: &authorizationv1.SelfSubjectAccessReview{}},
			{name: "v1beta1", obj: &authorizationv1beta1.SelfSubjectAccessReview{}},
		},
	},
	{
		group: "authorization.k8s.io", plural: "localsubjectaccessreviews", namespaced: true,
		versions: []versionSpec{
			{name: "v1", obj: &authorizationv1.LocalSubjectAccessReview{}},
			{name: "v1beta1", obj: &authorizationv1beta1.LocalSubjectAccessReview{}},
		},
	},
	{
		group: "authorization.k8s.io", plural: "selfsubjectrulesreviews",
		versions: []versionSpec{
			{name: "v1", obj: &authorizationv1.SelfSubjectRulesReview{}},
			{name: "v1beta1", obj: &authorizationv1beta1.SelfSubjectRulesReview{}},
		},
	},
	// Events of both groups, each stored on its own: Kubernetes keeps them in one
	// place, as one resource with renamed fields, which the registry cannot express.
	{
		group: "", plural: "events", namespaced: true, shortNames: []string{"ev"},
		columns:  eventColumns(".lastTimestamp", ".involvedObject.name", ".message"),
		versions: []versionSpec{{name: "v1", obj: &corev1.Event{}}},
	},
	{
		group: "events.k8s.io", plural: "events", namespaced: true, shortNames: []string{"ev"},
		columns: eventColumns(".eventTime", ".regarding.name", ".note"),
		versions: []versionSpec{
			{name: "v1", obj: &eventsv1.Event{}},
			{name: "v1beta1", obj: &eventsv1beta1.Event{}},
		},
	},
	{
		group: "coordination.k8s.io", plural: "leases", namespaced: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Holder", Type: "string", JSONPath: ".spec.holderIdentity"}},
		versions: []versionSpec{
			{name: "v1", obj: &coordinationv1.Lease{}},
			{name: "v1beta1", obj: &coordinationv1beta1.Lease{}},
		},
	},
	{
		group: "coordination.k8s.io", plural: "leasecandidates", namespaced: true,
		versions: []versionSpec{
			{name: "v1beta1", obj: &coordinationv1beta1.LeaseCandidate{}},
			{name: "v1alpha2", obj: &coordinationv1alpha2.LeaseCandidate{}},
			{name: "v1alpha1", schemaOf: "v1alpha2", history: &history{
				introduced: "1.31", removed: "1.32",
				source: "kubernetes/kubernetes#127857 added v1alpha2 in 1.32 and dropped v1alpha1",
			}},
		},
	},
	{
		group: "flowcontrol.apiserver.k8s.io", plural: "flowschemas",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "PriorityLevel", Type: "string", JSONPath: ".spec.priorityLevelConfiguration.name"},
			{Name: "MatchingPrecedence", Type: "integer", JSONPath: ".spec.matchingPrecedence"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &flowcontrolv1.FlowSchema{}},
			{name: "v1beta3", obj: &flowcontrolv1beta3.FlowSchema{}},
			{name: "v1beta2", obj: &flowcontrolv1beta2.FlowSchema{}},
			{name: "v1beta1", obj: &flowcontrolv1beta1.FlowSchema{}},
		},
	},
	{
		group: "flowcontrol.apiserver.k8s.io", plural: "prioritylevelconfigurations",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Type", Type: "string", JSONPath: ".spec.type"}},
		versions: []versionSpec{
			{name: "v1", obj: &flowcontrolv1.PriorityLevelConfiguration{}},
			{name: "v1beta3", obj: &flowcontrolv1beta3.PriorityLevelConfiguration{}},
			{name: "v1beta2", obj: &flowcontrolv1beta2.PriorityLevelConfiguration{}},
			{name: "v1beta1", obj: &flowcontrolv1beta1.PriorityLevelConfiguration{}},
		},
	},
	// Deployments as data: no controller rolls them out. Their scale subresource's
	// selector is spec.selector, which servers print as a selector string.
	{
		group: "apps", plural: "deployments", namespaced: true, shortNames: []string{"deploy"}, categories: []string{"all"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Ready", Type: "string", JSONPath: ".status.readyReplicas"},
			{Name: "Up-to-date", Type: "integer", JSONPath: ".status.updatedReplicas"},
			{Name: "Available", Type: "integer", JSONPath: ".status.availableReplicas"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		scale: &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".spec.selector"),
		},
		versions: []versionSpec{{name: "v1", obj: &appsv1.Deployment{}}},
	},
	// ReplicaSets as data, like Deployments: no controller creates their pods.
	{
		group: "apps", plural: "replicasets", namespaced: true, shortNames: []string{"rs"}, categories: []string{"all"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Desired", Type: "integer", JSONPath: ".spec.replicas"},
			{Name: "Current", Type: "integer", JSONPath: ".status.replicas"},
			{Name: "Ready", Type: "integer", JSONPath: ".status.readyReplicas"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		scale: &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".spec.selector"),
		},
		versions: []versionSpec{{name: "v1", obj: &appsv1.ReplicaSet{}}},
	},
	{
		group: "batch", plural: "cronjobs", namespaced: true, shortNames: []string{"cj"}, categories: []string{"all"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Schedule", Type: "string", JSONPath: ".spec.schedule"},
			{Name: "Timezone", Type: "string", JSONPath: ".spec.timeZone"},
			{Name: "Suspend", Type: "boolean", JSONPath: ".spec.suspend"},
			{Name: "Last Schedule", Type: "date", JSONPath: ".status.lastScheduleTime"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &batchv1.CronJob{}},
			{name: "v1beta1", obj: &batchv1beta1.CronJob{}},
		},
	},
	// Jobs as data, like CronJobs: no controller runs their pods. builtin gives them
	// the API server's part: defaults, the generated selector, batch/v1's legacy
	// orphaning default, kubectl's columns.
	{
		group: "batch", plural: "jobs", namespaced: true, categories: []string{"all"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Status", Type: "string", JSONPath: ".status.conditions"},
			{Name: "Completions", Type: "string", JSONPath: ".status.succeeded"},
			{Name: "Duration", Type: "string", JSONPath: ".status.completionTime"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{{name: "v1", obj: &batchv1.Job{}}},
	},
	// Pod disruption budgets as data: without pods, nothing evicts and nothing
	// computes how many disruptions are allowed.
	{
		group: "policy", plural: "poddisruptionbudgets", namespaced: true, shortNames: []string{"pdb"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Min Available", Type: "string", JSONPath: ".spec.minAvailable"},
			{Name: "Max Unavailable", Type: "string", JSONPath: ".spec.maxUnavailable"},
			{Name: "Allowed Disruptions", Type: "integer", JSONPath: ".status.disruptionsAllowed"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &policyv1.PodDisruptionBudget{}},
			{name: "v1beta1", obj: &policyv1beta1.PodDisruptionBudget{}},
		},
	},
	// CSINodes, RuntimeClasses and Ingresses as data: written by the nodes' kubelets,
	// read by the nodes' runtimes and by ingress controllers, none of which Concord
	// runs.
	{
		group: "storage.k8s.io", plural: "csinodes",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Drivers", Type: "integer", JSONPath: ".spec.drivers"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &storagev1.CSINode{}},
			{name: "v1beta1", obj: &storagev1beta1.CSINode{}},
		},
	},
	{
		group: "node.k8s.io", plural: "runtimeclasses",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Handler", Type: "string", JSONPath: ".handler"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &nodev1.RuntimeClass{}},
			{name: "v1beta1", obj: &nodev1beta1.RuntimeClass{}},
		},
	},
	{
		group: "networking.k8s.io", plural: "ingresses", namespaced: true, shortNames: []string{"ing"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Class", Type: "string", JSONPath: ".spec.ingressClassName"},
			{Name: "Hosts", Type: "string", JSONPath: ".spec.rules[*].host"},
			{Name: "Address", Type: "string", JSONPath: ".status.loadBalancer.ingress[*].ip"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &networkingv1.Ingress{}},
			{name: "v1beta1", obj: &networkingv1beta1.Ingress{}},
		},
	},
	// Certificate signing requests: kubesemantics records who asked (spec.username, uid,
	// groups, extra) as Kubernetes does. Nothing approves or signs them: Concord runs
	// no signer, and does not serve the approval subresource.
	{
		group: "certificates.k8s.io", plural: "certificatesigningrequests", shortNames: []string{"csr"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "SignerName", Type: "string", JSONPath: ".spec.signerName"},
			{Name: "Requestor", Type: "string", JSONPath: ".spec.username"},
			{Name: "RequestedDuration", Type: "string", JSONPath: ".spec.expirationSeconds"},
			{Name: "Condition", Type: "string", JSONPath: ".status.conditions[*].type"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &certificatesv1.CertificateSigningRequest{}},
			{name: "v1beta1", obj: &certificatesv1beta1.CertificateSigningRequest{}},
		},
	},
	{
		group: "autoscaling", plural: "horizontalpodautoscalers", namespaced: true, shortNames: []string{"hpa"}, categories: []string{"all"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "MinPods", Type: "integer", JSONPath: ".spec.minReplicas"},
			{Name: "MaxPods", Type: "integer", JSONPath: ".spec.maxReplicas"},
			{Name: "Replicas", Type: "integer", JSONPath: ".status.currentReplicas"},
		},
		versions: []versionSpec{
			{name: "v2", obj: &autoscalingv2.HorizontalPodAutoscaler{}},
			{name: "v2beta2", schemaOf: "v2", history: &history{
				introduced: "1.12", deprecated: "1.23", removed: "1.26", replacement: "v2",
				source: "Kubernetes deprecated API migration guide: autoscaling/v2beta2 no longer served as of 1.26, deprecated when autoscaling/v2 went GA in 1.23",
			}},
			{name: "v2beta1", schemaOf: "v2", history: &history{
				introduced: "1.8", deprecated: "1.22", removed: "1.25", replacement: "v2beta2",
				source: "k8s.io/api autoscaling/v2beta1 zz_generated.prerelease-lifecycle.go before its deletion",
			}},
			{name: "v1", obj: &autoscalingv1.HorizontalPodAutoscaler{}},
		},
	},
	{
		group: "admissionregistration.k8s.io", plural: "validatingadmissionpolicies", categories: []string{"api-extensions"},
		versions: []versionSpec{
			{name: "v1", obj: &admissionregistrationv1.ValidatingAdmissionPolicy{}},
			{name: "v1beta1", obj: &admissionregistrationv1beta1.ValidatingAdmissionPolicy{}},
			{name: "v1alpha1", obj: &admissionregistrationv1alpha1.ValidatingAdmissionPolicy{}},
		},
	},
	{
		group: "admissionregistration.k8s.io", plural: "validatingadmissionpolicybindings", categories: []string{"api-extensions"},
		versions: []versionSpec{
			{name: "v1", obj: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}},
			{name: "v1beta1", obj: &admissionregistrationv1beta1.ValidatingAdmissionPolicyBinding{}},
			{name: "v1alpha1", obj: &admissionregistrationv1alpha1.ValidatingAdmissionPolicyBinding{}},
		},
	},
	{
		group: "admissionregistration.k8s.io", plural: "mutatingadmissionpolicies", categories: []string{"api-extensions"},
		versions: []versionSpec{
			{name: "v1", obj: &admissionregistrationv1.MutatingAdmissionPolicy{}},
			{name: "v1beta1", obj: &admissionregistrationv1beta1.MutatingAdmissionPolicy{}},
			{name: "v1alpha1", obj: &admissionregistrationv1alpha1.MutatingAdmissionPolicy{}},
		},
	},
	{
		group: "admissionregistration.k8s.io", plural: "mutatingadmissionpolicybindings", categories: []string{"api-extensions"},
		versions: []versionSpec{
			{name: "v1", obj: &admissionregistrationv1.MutatingAdmissionPolicyBinding{}},
			{name: "v1beta1", obj: &admissionregistrationv1beta1.MutatingAdmissionPolicyBinding{}},
			{name: "v1alpha1", obj: &admissionregistrationv1alpha1.MutatingAdmissionPolicyBinding{}},
		},
	},
	// Admission webhooks: package admission calls them on every write (k8s.io/apiserver's
	// webhook plugins) and validates their configurations as Kubernetes does. WEBHOOKS
	// is computed by its table hook (the number of webhooks).
	{
		group: "admissionregistration.k8s.io", plural: "validatingwebhookconfigurations", categories: []string{"api-extensions"},
		columns: webhookColumns,
		versions: []versionSpec{
			{name: "v1", obj: &admissionregistrationv1.ValidatingWebhookConfiguration{}},
			{name: "v1beta1", obj: &admissionregistrationv1beta1.ValidatingWebhookConfiguration{}},
		},
	},
	{
		group: "admissionregistration.k8s.io", plural: "mutatingwebhookconfigurations", categories: []string{"api-extensions"},
		columns: webhookColumns,
		versions: []versionSpec{
			{name: "v1", obj: &admissionregistrationv1.MutatingWebhookConfiguration{}},
			{name: "v1beta1", obj: &admissionregistrationv1beta1.MutatingWebhookConfiguration{}},
		},
	},
	// IP addresses: package service allocates Services' cluster IPs as IPAddress
	// objects (one per address, created only if absent) from the ServiceCIDRs' ranges.
	{
		group: "networking.k8s.io", plural: "ipaddresses", shortNames: []string{"ip"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "ParentRef", Type: "string", JSONPath: ".spec.parentRef"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &networkingv1.IPAddress{}},
			{name: "v1beta1", obj: &networkingv1beta1.IPAddress{}},
			{name: "v1alpha1", schemaOf: "v1beta1", history: &history{
				introduced: "1.27", deprecated: "1.30", removed: "1.33",
				source: "k8s.io/api networking/v1alpha1 types.go tagged only introduced=1.27; deprecated and removed are prerelease-lifecycle-gen's defaults (+3 releases each), as for ServiceCIDR",
			}},
		},
	},
	// Priority classes: package priorityclass gives them Kubernetes' validation, its
	// one-default admission and the two system classes, created at start.
	{
		group: "scheduling.k8s.io", plural: "priorityclasses", shortNames: []string{"pc"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Value", Type: "integer", JSONPath: ".value"},
			{Name: "Global-Default", Type: "boolean", JSONPath: ".globalDefault"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "PreemptionPolicy", Type: "string", JSONPath: ".preemptionPolicy"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &schedulingv1.PriorityClass{}},
			{name: "v1beta1", obj: &schedulingv1beta1.PriorityClass{}},
		},
	},
	{
		group: "networking.k8s.io", plural: "servicecidrs",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "CIDRs", Type: "string", JSONPath: ".spec.cidrs"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &networkingv1.ServiceCIDR{}},
			{name: "v1beta1", obj: &networkingv1beta1.ServiceCIDR{}},
			{name: "v1alpha1", schemaOf: "v1beta1", history: &history{
				introduced: "1.27", deprecated: "1.30", removed: "1.33",
				source: "k8s.io/api networking/v1alpha1 types.go tagged only introduced=1.27; deprecated and removed are prerelease-lifecycle-gen's defaults (+3 releases each)",
			}},
		},
	},
	{
		group: "storagemigration.k8s.io", plural: "storageversionmigrations",
		versions: []versionSpec{
			{name: "v1", obj: &storagemigrationv1.StorageVersionMigration{}},
			{name: "v1beta1", obj: &storagemigrationv1beta1.StorageVersionMigration{}},
			{name: "v1alpha1", schemaOf: "v1beta1", history: &history{
				introduced: "1.30", deprecated: "1.33", removed: "1.35",
				source: "k8s.io/api storagemigration/v1alpha1 prerelease lifecycle (1.30, 1.33); kubernetes/kubernetes#134784 removed v1alpha1 when it added v1beta1 in 1.35",
			}},
		},
	},
	{
		group: "internal.apiserver.k8s.io", plural: "storageversions",
		versions: []versionSpec{
			{name: "v1alpha1", obj: &apiserverinternalv1alpha1.StorageVersion{}, history: &history{
				introduced: "1.20",
				source:     "the type has no prerelease-lifecycle tags; it came with the StorageVersionAPI feature, alpha in 1.20",
			}},
		},
	},
}, dataResources...)

// eventColumns are the Table columns kubectl shows for Events: LAST SEEN, TYPE, REASON,
// OBJECT and MESSAGE, with the JSONPaths that come closest in a group that calls its
// fields lastSeen, object and message. Servers compute LAST SEEN and OBJECT as kubectl
// does (the newest of several timestamps; kind/name) with a Go hook.
func eventColumns(lastSeen, object, message string) []apiextensionsv1.CustomResourceColumnDefinition {
	return []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Last Seen", Type: "date", JSONPath: lastSeen},
		{Name: "Type", Type: "string", JSONPath: ".type"},
		{Name: "Reason", Type: "string", JSONPath: ".reason"},
		{Name: "Object", Type: "string", JSONPath: object},
		{Name: "Message", Type: "string", JSONPath: message},
	}
}

// webhookColumns are kubectl's columns of webhook configurations: WEBHOOKS (how many)
// and AGE.
var webhookColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Webhooks", Type: "integer", JSONPath: ".webhooks"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
}

// createdAt is the column kubectl shows for roles: when they were created.
var createdAt = apiextensionsv1.CustomResourceColumnDefinition{Name: "Created At", Type: "string", Format: "date-time", JSONPath: ".metadata.creationTimestamp"}

// bindingColumns are kubectl's columns of role bindings: the role as Kind/name (a
// table hook computes it), the age, and who is bound (wide output).
var bindingColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Role", Type: "string", JSONPath: ".roleRef.name"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	{Name: "Users", Type: "string", Priority: 1, JSONPath: ".subjects[?(@.kind==\"User\")].name"},
	{Name: "Groups", Type: "string", Priority: 1, JSONPath: ".subjects[?(@.kind==\"Group\")].name"},
	{Name: "ServiceAccounts", Type: "string", Priority: 1, JSONPath: ".subjects[?(@.kind==\"ServiceAccount\")].name"},
}

// rbacVersions are the versions of an RBAC resource: v1 and v1beta1 from their Go
// types, and v1alpha1, whose type has no lifecycle, from its history.
func rbacVersions(v1, v1beta1 any) []versionSpec {
	return []versionSpec{
		{name: "v1", obj: v1},
		{name: "v1beta1", obj: v1beta1},
		{name: "v1alpha1", schemaOf: "v1beta1", history: &history{
			introduced: "1.6", deprecated: "1.17", removed: "1.22", replacement: "v1",
			source: "Kubernetes deprecated API migration guide: rbac.authorization.k8s.io/v1beta1 and v1alpha1 no longer served as of 1.22, deprecated in 1.17",
		}},
	}
}
