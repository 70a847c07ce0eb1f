package controlplane

import (
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// builtinResources are the resources every server persists.
func builtinResources() []*registry.Resource {
	v1 := func() []registry.Version { return []registry.Version{{Name: "v1", Served: true}} }
	return []*registry.Resource{
		{
			Names:          apiextensionsv1.CustomResourceDefinitionNames{Plural: "namespaces", Singular: "namespace", Kind: "Namespace", ListKind: "NamespaceList", ShortNames: []string{"ns"}},
			Versions:       []registry.Version{{Name: "v1", Served: true, Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}}},
			StorageVersion: "v1",
			Hooks:          namespace.Hooks(),
		},
		{
			Names:          apiextensionsv1.CustomResourceDefinitionNames{Plural: "configmaps", Singular: "configmap", Kind: "ConfigMap", ListKind: "ConfigMapList", ShortNames: []string{"cm"}},
			Namespaced:     true,
			Versions:       v1(),
			StorageVersion: "v1",
		},
		{
			Group:          "coordination.k8s.io",
			Names:          apiextensionsv1.CustomResourceDefinitionNames{Plural: "leases", Singular: "lease", Kind: "Lease", ListKind: "LeaseList"},
			Namespaced:     true,
			Versions:       v1(),
			StorageVersion: "v1",
			Hooks:          &registry.Hooks{AllowCreateOnUpdate: true},
		},
	}
}

func versionInfo() version.Info {
	return version.Info{Major: "1", Minor: "36", GitVersion: "v1.36.0-concord"}
}
