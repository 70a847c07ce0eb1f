package main

import (
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1alpha1 "k8s.io/api/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	storagev1 "k8s.io/api/storage/v1"
	storagev1alpha1 "k8s.io/api/storage/v1alpha1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// dataResources are the rest of kube-apiserver's built-in resources: workloads, nodes
// and storage, networking policy, trust bundles and dynamic resource allocation.
// Concord serves them as data: it runs no kubelet, scheduler or controller that would
// act on them, and their subresources that need a server's work (a pod's log, exec,
// attach, port forwarding, proxy, binding, eviction, ephemeral containers and resize;
// a node's proxy) are not served. Their columns are the JSONPaths closest to what
// kubectl shows; the columns kube's printers compute (a pod's READY and RESTARTS, a
// node's ROLES, a claim's STATE) show the fields they are computed from.
var dataResources = []resourceSpec{
	{
		group: "", plural: "pods", namespaced: true, shortNames: []string{"po"}, categories: []string{"all"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Ready", Type: "string", JSONPath: ".status.containerStatuses[*].ready"},
			{Name: "Status", Type: "string", JSONPath: ".status.phase"},
			{Name: "Restarts", Type: "string", JSONPath: ".status.containerStatuses[*].restartCount"},
			age,
			{Name: "IP", Type: "string", Priority: 1, JSONPath: ".status.podIP"},
			{Name: "Node", Type: "string", Priority: 1, JSONPath: ".spec.nodeName"},
			{Name: "Nominated Node", Type: "string", Priority: 1, JSONPath: ".status.nominatedNodeName"},
			{Name: "Readiness Gates", Type: "string", Priority: 1, JSONPath: ".spec.readinessGates[*].conditionType"},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.Pod{}}},
	},
	// Bindings are created only (a scheduler binding a pod to a node); stored as data,
	// they bind nothing.
	{
		group: "", plural: "bindings", namespaced: true,
		versions: []versionSpec{{name: "v1", obj: &corev1.Binding{}}},
	},
	{
		group: "", plural: "nodes", shortNames: []string{"no"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Status", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
			{Name: "Roles", Type: "string", JSONPath: ".metadata.labels"},
			age,
			{Name: "Version", Type: "string", JSONPath: ".status.nodeInfo.kubeletVersion"},
			{Name: "Internal-IP", Type: "string", Priority: 1, JSONPath: `.status.addresses[?(@.type=="InternalIP")].address`},
			{Name: "External-IP", Type: "string", Priority: 1, JSONPath: `.status.addresses[?(@.type=="ExternalIP")].address`},
			{Name: "OS-Image", Type: "string", Priority: 1, JSONPath: ".status.nodeInfo.osImage"},
			{Name: "Kernel-Version", Type: "string", Priority: 1, JSONPath: ".status.nodeInfo.kernelVersion"},
			{Name: "Container-Runtime", Type: "string", Priority: 1, JSONPath: ".status.nodeInfo.containerRuntimeVersion"},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.Node{}}},
	},
	// Component statuses are read only (get, list); kube-apiserver computes them from
	// its health checks, Concord lists what is stored.
	{
		group: "", plural: "componentstatuses", shortNames: []string{"cs"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Status", Type: "string", JSONPath: `.conditions[?(@.type=="Healthy")].status`},
			{Name: "Message", Type: "string", JSONPath: `.conditions[?(@.type=="Healthy")].message`},
			{Name: "Error", Type: "string", JSONPath: `.conditions[?(@.type=="Healthy")].error`},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.ComponentStatus{}}},
	},
	{
		group: "", plural: "endpoints", namespaced: true, shortNames: []string{"ep"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Endpoints", Type: "string", JSONPath: ".subsets[*].addresses[*].ip"},
			age,
		},
		//nolint:staticcheck // SA1019: Endpoints are deprecated (1.33) but still served, as in Kubernetes.
		versions: []versionSpec{{name: "v1", obj: &corev1.Endpoints{}, history: &history{
			introduced: "1.0", deprecated: "1.33",
			source: "k8s.io/api core/v1 Endpoints: introduced=1.0 (zz_generated.prerelease-lifecycle.go), deprecated in 1.33 (lifecycle.go), whose replacement, discovery.k8s.io/v1 EndpointSlice, is another resource: the catalog records none",
		}}},
	},
	{
		group: "", plural: "limitranges", namespaced: true, shortNames: []string{"limits"},
		columns:  []apiextensionsv1.CustomResourceColumnDefinition{createdAt},
		versions: []versionSpec{{name: "v1", obj: &corev1.LimitRange{}}},
	},
	{
		group: "", plural: "persistentvolumeclaims", namespaced: true, shortNames: []string{"pvc"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Status", Type: "string", JSONPath: ".status.phase"},
			{Name: "Volume", Type: "string", JSONPath: ".spec.volumeName"},
			{Name: "Capacity", Type: "string", JSONPath: ".status.capacity.storage"},
			{Name: "Access Modes", Type: "string", JSONPath: ".status.accessModes"},
			{Name: "StorageClass", Type: "string", JSONPath: ".spec.storageClassName"},
			{Name: "VolumeAttributesClass", Type: "string", JSONPath: ".spec.volumeAttributesClassName"},
			age,
			{Name: "VolumeMode", Type: "string", Priority: 1, JSONPath: ".spec.volumeMode"},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.PersistentVolumeClaim{}}},
	},
	{
		group: "", plural: "persistentvolumes", shortNames: []string{"pv"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Capacity", Type: "string", JSONPath: ".spec.capacity.storage"},
			{Name: "Access Modes", Type: "string", JSONPath: ".spec.accessModes"},
			{Name: "Reclaim Policy", Type: "string", JSONPath: ".spec.persistentVolumeReclaimPolicy"},
			{Name: "Status", Type: "string", JSONPath: ".status.phase"},
			{Name: "Claim", Type: "string", JSONPath: ".spec.claimRef.name"},
			{Name: "StorageClass", Type: "string", JSONPath: ".spec.storageClassName"},
			{Name: "VolumeAttributesClass", Type: "string", JSONPath: ".spec.volumeAttributesClassName"},
			{Name: "Reason", Type: "string", JSONPath: ".status.reason"},
			age,
			{Name: "VolumeMode", Type: "string", Priority: 1, JSONPath: ".spec.volumeMode"},
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.PersistentVolume{}}},
	},
	// Replication controllers select their pods by a map of labels, not a
	// LabelSelector: the scale subresource reports no selector until a server computes
	// it from the map.
	{
		group: "", plural: "replicationcontrollers", namespaced: true, shortNames: []string{"rc"}, categories: []string{"all"},
		columns: replicaColumns(".spec.replicas", ".status.replicas", ".status.readyReplicas", ".spec.template.spec.containers", ".spec.selector"),
		scale: &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
		},
		versions: []versionSpec{{name: "v1", obj: &corev1.ReplicationController{}}},
	},
	{
		group: "apps", plural: "statefulsets", namespaced: true, shortNames: []string{"sts"}, categories: []string{"all"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Ready", Type: "string", JSONPath: ".status.readyReplicas"},
			age,
			{Name: "Containers", Type: "string", Priority: 1, JSONPath: ".spec.template.spec.containers[*].name"},
			{Name: "Images", Type: "string", Priority: 1, JSONPath: ".spec.template.spec.containers[*].image"},
		},
		scale: &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".spec.selector"),
		},
		versions: []versionSpec{{name: "v1", obj: &appsv1.StatefulSet{}}},
	},
	{
		group: "apps", plural: "daemonsets", namespaced: true, shortNames: []string{"ds"}, categories: []string{"all"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Desired", Type: "integer", JSONPath: ".status.desiredNumberScheduled"},
			{Name: "Current", Type: "integer", JSONPath: ".status.currentNumberScheduled"},
			{Name: "Ready", Type: "integer", JSONPath: ".status.numberReady"},
			{Name: "Up-to-date", Type: "integer", JSONPath: ".status.updatedNumberScheduled"},
			{Name: "Available", Type: "integer", JSONPath: ".status.numberAvailable"},
			{Name: "Node Selector", Type: "string", JSONPath: ".spec.template.spec.nodeSelector"},
			age,
			{Name: "Containers", Type: "string", Priority: 1, JSONPath: ".spec.template.spec.containers[*].name"},
			{Name: "Images", Type: "string", Priority: 1, JSONPath: ".spec.template.spec.containers[*].image"},
			{Name: "Selector", Type: "string", Priority: 1, JSONPath: ".spec.selector"},
		},
		versions: []versionSpec{{name: "v1", obj: &appsv1.DaemonSet{}}},
	},
	{
		group: "apps", plural: "controllerrevisions", namespaced: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Controller", Type: "string", JSONPath: ".metadata.ownerReferences[?(@.controller==true)].name"},
			{Name: "Revision", Type: "integer", JSONPath: ".revision"},
			age,
		},
		versions: []versionSpec{{name: "v1", obj: &appsv1.ControllerRevision{}}},
	},
	{
		group: "networking.k8s.io", plural: "ingressclasses",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Controller", Type: "string", JSONPath: ".spec.controller"},
			{Name: "Parameters", Type: "string", JSONPath: ".spec.parameters.name"},
			age,
		},
		versions: []versionSpec{
			{name: "v1", obj: &networkingv1.IngressClass{}},
			{name: "v1beta1", obj: &networkingv1beta1.IngressClass{}, history: &history{
				introduced: "1.18", deprecated: "1.19", removed: "1.22", replacement: "v1",
				source: "k8s.io/api networking/v1beta1 zz_generated.prerelease-lifecycle.go (1.18, 1.19, 1.22), whose replacement names the kind IngressClassList: v1 IngressClass is meant",
			}},
		},
	},
	{
		group: "networking.k8s.io", plural: "networkpolicies", namespaced: true, shortNames: []string{"netpol"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Pod-Selector", Type: "string", JSONPath: ".spec.podSelector"},
			age,
		},
		versions: []versionSpec{{name: "v1", obj: &networkingv1.NetworkPolicy{}}},
	},
	{
		group: "storage.k8s.io", plural: "storageclasses", shortNames: []string{"sc"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Provisioner", Type: "string", JSONPath: ".provisioner"},
			{Name: "ReclaimPolicy", Type: "string", JSONPath: ".reclaimPolicy"},
			{Name: "VolumeBindingMode", Type: "string", JSONPath: ".volumeBindingMode"},
			{Name: "AllowVolumeExpansion", Type: "string", JSONPath: ".allowVolumeExpansion"},
			age,
		},
		versions: []versionSpec{
			{name: "v1", obj: &storagev1.StorageClass{}},
			{name: "v1beta1", obj: &storagev1beta1.StorageClass{}},
		},
	},
	{
		group: "storage.k8s.io", plural: "csidrivers",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "AttachRequired", Type: "boolean", JSONPath: ".spec.attachRequired"},
			{Name: "PodInfoOnMount", Type: "boolean", JSONPath: ".spec.podInfoOnMount"},
			{Name: "StorageCapacity", Type: "boolean", JSONPath: ".spec.storageCapacity"},
			{Name: "TokenRequests", Type: "string", JSONPath: ".spec.tokenRequests[*].audience"},
			{Name: "RequiresRepublish", Type: "boolean", JSONPath: ".spec.requiresRepublish"},
			{Name: "Modes", Type: "string", JSONPath: ".spec.volumeLifecycleModes"},
			age,
		},
		versions: []versionSpec{
			{name: "v1", obj: &storagev1.CSIDriver{}},
			{name: "v1beta1", obj: &storagev1beta1.CSIDriver{}},
		},
	},
	{
		group: "storage.k8s.io", plural: "csistoragecapacities", namespaced: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "StorageClassName", Type: "string", JSONPath: ".storageClassName"},
			{Name: "Capacity", Type: "string", JSONPath: ".capacity"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &storagev1.CSIStorageCapacity{}},
			{name: "v1beta1", obj: &storagev1beta1.CSIStorageCapacity{}},
			{name: "v1alpha1", obj: &storagev1alpha1.CSIStorageCapacity{}},
		},
	},
	{
		group: "storage.k8s.io", plural: "volumeattachments",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Attacher", Type: "string", JSONPath: ".spec.attacher"},
			{Name: "PV", Type: "string", JSONPath: ".spec.source.persistentVolumeName"},
			{Name: "Node", Type: "string", JSONPath: ".spec.nodeName"},
			{Name: "Attached", Type: "boolean", JSONPath: ".status.attached"},
			age,
		},
		versions: []versionSpec{
			{name: "v1", obj: &storagev1.VolumeAttachment{}},
			{name: "v1beta1", obj: &storagev1beta1.VolumeAttachment{}},
			{name: "v1alpha1", obj: &storagev1alpha1.VolumeAttachment{}},
		},
	},
	{
		group: "storage.k8s.io", plural: "volumeattributesclasses", shortNames: []string{"vac"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "DriverName", Type: "string", JSONPath: ".driverName"},
			age,
		},
		versions: []versionSpec{
			{name: "v1", obj: &storagev1.VolumeAttributesClass{}},
			{name: "v1beta1", obj: &storagev1beta1.VolumeAttributesClass{}},
			{name: "v1alpha1", obj: &storagev1alpha1.VolumeAttributesClass{}},
		},
	},
	{
		group: "certificates.k8s.io", plural: "clustertrustbundles",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "SignerName", Type: "string", JSONPath: ".spec.signerName"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &certificatesv1.ClusterTrustBundle{}},
			{name: "v1beta1", obj: &certificatesv1beta1.ClusterTrustBundle{}},
			{name: "v1alpha1", obj: &certificatesv1alpha1.ClusterTrustBundle{}, history: &history{
				introduced: "1.27", deprecated: "1.34", removed: "1.37",
				source: "k8s.io/api certificates/v1alpha1 first has the type in v0.27.0 (its tag says introduced=1.26, a release whose k8s.io/api has no certificates/v1alpha1); deprecated and removed from its zz_generated.prerelease-lifecycle.go",
			}},
		},
	},
	{
		group: "certificates.k8s.io", plural: "podcertificaterequests", namespaced: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "PodName", Type: "string", JSONPath: ".spec.podName"},
			{Name: "ServiceAccountName", Type: "string", JSONPath: ".spec.serviceAccountName"},
			{Name: "NodeName", Type: "string", JSONPath: ".spec.nodeName"},
			{Name: "SignerName", Type: "string", JSONPath: ".spec.signerName"},
			{Name: "State", Type: "string", JSONPath: `.status.conditions[?(@.status=="True")].type`},
			{Name: "UnverifiedUserAnnotations", Type: "string", JSONPath: ".spec.unverifiedUserAnnotations"},
		},
		versions: []versionSpec{
			{name: "v1", obj: &certificatesv1.PodCertificateRequest{}},
			{name: "v1beta1", obj: &certificatesv1beta1.PodCertificateRequest{}},
			{name: "v1alpha1", schemaOf: "v1beta1", history: &history{
				introduced: "1.34", removed: "1.35",
				source: "k8s.io/api certificates/v1alpha1 has PodCertificateRequest in v0.34.0 only (tagged introduced=1.34); v0.35.0 moved it to v1beta1",
			}},
		},
	},
	{
		group: "resource.k8s.io", plural: "deviceclasses",
		columns:  []apiextensionsv1.CustomResourceColumnDefinition{age},
		versions: draVersions(&resourcev1.DeviceClass{}, &resourcev1beta2.DeviceClass{}, &resourcev1beta1.DeviceClass{}, "", false),
	},
	{
		group: "resource.k8s.io", plural: "resourceclaims", namespaced: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "State", Type: "string", JSONPath: ".status.reservedFor[*].name"},
			age,
		},
		versions: draVersions(&resourcev1.ResourceClaim{}, &resourcev1beta2.ResourceClaim{}, &resourcev1beta1.ResourceClaim{}, "1.27", true),
	},
	{
		group: "resource.k8s.io", plural: "resourceclaimtemplates", namespaced: true,
		columns:  []apiextensionsv1.CustomResourceColumnDefinition{age},
		versions: draVersions(&resourcev1.ResourceClaimTemplate{}, &resourcev1beta2.ResourceClaimTemplate{}, &resourcev1beta1.ResourceClaimTemplate{}, "1.27", true),
	},
	{
		group: "resource.k8s.io", plural: "resourceslices",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Node", Type: "string", JSONPath: ".spec.nodeName"},
			{Name: "Driver", Type: "string", JSONPath: ".spec.driver"},
			{Name: "Pool", Type: "string", JSONPath: ".spec.pool.name"},
			age,
		},
		versions: draVersions(&resourcev1.ResourceSlice{}, &resourcev1beta2.ResourceSlice{}, &resourcev1beta1.ResourceSlice{}, "1.30", false),
	},
	{
		group: "resource.k8s.io", plural: "devicetaintrules",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Key", Type: "string", JSONPath: ".spec.taint.key"},
			{Name: "Value", Type: "string", JSONPath: ".spec.taint.value"},
			{Name: "Effect", Type: "string", JSONPath: ".spec.taint.effect"},
			{Name: "TimeAdded", Type: "date", JSONPath: ".spec.taint.timeAdded"},
			age,
		},
		versions: []versionSpec{
			{name: "v1", obj: &resourcev1.DeviceTaintRule{}},
			{name: "v1beta2", obj: &resourcev1beta2.DeviceTaintRule{}},
			{name: "v1alpha3", obj: &resourcev1alpha3.DeviceTaintRule{}},
		},
	},
	{
		group: "resource.k8s.io", plural: "resourcepoolstatusrequests",
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Driver", Type: "string", JSONPath: ".spec.driver"},
			{Name: "Pools", Type: "integer", JSONPath: ".status.poolCount"},
			{Name: "Status", Type: "string", JSONPath: `.status.conditions[?(@.status=="True")].type`},
			{Name: "Completed", Type: "date", JSONPath: `.status.conditions[?(@.type=="Complete")].lastTransitionTime`},
		},
		versions: []versionSpec{{name: "v1alpha3", obj: &resourcev1alpha3.ResourcePoolStatusRequest{}}},
	},
}

// age is the AGE column most resources end with.
var age = apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}

// replicaColumns are kubectl's columns of a controller of replicas: DESIRED, CURRENT,
// READY and AGE, then (wide) its template's containers and images and its selector.
func replicaColumns(desired, current, ready, containers, selector string) []apiextensionsv1.CustomResourceColumnDefinition {
	return []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Desired", Type: "integer", JSONPath: desired},
		{Name: "Current", Type: "integer", JSONPath: current},
		{Name: "Ready", Type: "integer", JSONPath: ready},
		age,
		{Name: "Containers", Type: "string", Priority: 1, JSONPath: containers + "[*].name"},
		{Name: "Images", Type: "string", Priority: 1, JSONPath: containers + "[*].image"},
		{Name: "Selector", Type: "string", Priority: 1, JSONPath: selector},
	}
}

// draVersions are the versions of a resource.k8s.io resource: v1, v1beta2 and v1beta1
// from their Go types, and the alpha versions k8s.io/api has deleted, which reuse
// v1beta1's schema: v1alpha3 from 1.31 until 1.34 (k8s.io/api v0.34.0 kept only
// DeviceTaintRule in it), v1alpha2 from alpha2 (the release that first had the kind in
// it; "" if it never did) until 1.31, and, if alpha1, v1alpha1 in 1.26 alone.
func draVersions(v1, v1beta2, v1beta1 any, alpha2 string, alpha1 bool) []versionSpec {
	vs := []versionSpec{
		{name: "v1", obj: v1},
		{name: "v1beta2", obj: v1beta2},
		{name: "v1beta1", obj: v1beta1},
		{name: "v1alpha3", schemaOf: "v1beta1", history: &history{
			introduced: "1.31", removed: "1.34",
			source: "k8s.io/api resource/v1alpha3 has the kind from v0.31.0 to v0.33.0 (tagged introduced=1.31, deprecated=1.34, removed=1.37); v0.34.0 deleted it, when v1 came",
		}},
	}
	if alpha2 != "" {
		vs = append(vs, versionSpec{name: "v1alpha2", schemaOf: "v1beta1", history: &history{
			introduced: alpha2, removed: "1.31",
			source: "k8s.io/api resource/v1alpha2, without prerelease-lifecycle tags, from v0.27.0 to v0.30.0 (ResourceSlice in v0.30.0 only); v0.31.0 replaced it with v1alpha3",
		}})
	}
	if alpha1 {
		vs = append(vs, versionSpec{name: "v1alpha1", schemaOf: "v1beta1", history: &history{
			introduced: "1.26", removed: "1.27",
			source: "k8s.io/api v0.26.0 has resource/v1alpha1 (ResourceClaim, ResourceClaimTemplate, ResourceClass); v0.27.0 replaced it with v1alpha2",
		}})
	}
	return vs
}
