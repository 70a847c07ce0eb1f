package controlplane

import (
	"fmt"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

var (
	namespacesGR = schema.GroupResource{Resource: "namespaces"}
	leasesGR     = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
)

// builtinHooks are the Go behaviours of built-in resources; every other catalog
// resource is storage-only.
func builtinHooks() map[schema.GroupResource]*registry.Hooks {
	return map[schema.GroupResource]*registry.Hooks{
		namespacesGR: namespace.Hooks(),
		// Leases may be created by PUT, as in Kubernetes.
		leasesGR: {AllowCreateOnUpdate: true},
	}
}

// builtinResources are the resources of the catalog at the server's versions.
func builtinResources(cat *catalog.Catalog, v compatibility.Versions) ([]*registry.Resource, error) {
	res, err := compatibility.Resources(cat, v, builtinHooks())
	if err != nil {
		return nil, err
	}
	for _, gr := range []schema.GroupResource{namespacesGR, leasesGR} {
		found := false
		for _, r := range res {
			found = found || r.GroupResource() == gr
		}
		if !found {
			return nil, fmt.Errorf("the API catalog does not define %s, which every server needs", gr)
		}
	}
	return res, nil
}

// versionInfo is what /version says.
func versionInfo(v compatibility.Versions) version.Info {
	return version.Info{
		Major:      fmt.Sprint(v.Binary.Major()),
		Minor:      fmt.Sprint(v.Binary.Minor()),
		GitVersion: fmt.Sprintf("v%d.%d.0-concord", v.Binary.Major(), v.Binary.Minor()),
	}
}
