package controlplane

import (
	"fmt"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storageversion"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// builtinResources are the resources of the catalog the server serves.
func builtinResources(compat *compatibility.Config) ([]*registry.Resource, error) {
	res, err := compat.Resources(builtinHooks())
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		if r.GroupResource() == migration.StorageVersionMigrations.GroupResource() {
			if err := migration.ExtendStorageVersionMigration(r); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range res {
		if r.GroupResource() == storageversion.GroupResource {
			storageversion.Configure(r)
		}
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

// gitVersion names the build in /version: the binary's release, marked as Concord's.
func gitVersion(compat *compatibility.Config) string {
	b := compat.Versions.Binary
	return fmt.Sprintf("v%d.%d.0-concord", b.Major(), b.Minor())
}
