package api

// The CustomResourceDefinition manifests of the storage-migration APIs, embedded in
// the binary: migration.k8s.io/v1alpha1 StorageState, and storagemigration.k8s.io/v1
// StorageVersionMigration with Concord's progress fields for clusters that do not
// serve that API themselves. The YAML files beside this one are the only definition of
// these schemas; everything else (the controllers, the status fields added to
// Concord's built-in StorageVersionMigration) is derived from them. Installing them is
// migration.EnsureCRDs.

import (
	"embed"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// RevisionAnnotation numbers the revisions of a manifest: a release whose manifest
// changes raises it, and an older release never replaces a definition of a higher
// revision (see migration.EnsureCRDs).
const RevisionAnnotation = "migration.concord.io/definition-revision"

// The manifests' file names, which are also the definitions' names.
const (
	StorageStatesFile            = "storagestates.migration.k8s.io.yaml"
	StorageVersionMigrationsFile = "storageversionmigrations.storagemigration.k8s.io.yaml"
	storageStatesName            = "storagestates.migration.k8s.io"
	storageVersionMigrationsName = "storageversionmigrations.storagemigration.k8s.io"
)

//go:embed *.yaml
var files embed.FS

// StorageStateCRD returns a new copy of the StorageState definition.
func StorageStateCRD() *apiextensionsv1.CustomResourceDefinition {
	return mustLoad(StorageStatesFile, storageStatesName)
}

// StorageVersionMigrationCRD returns a new copy of the StorageVersionMigration definition
// (storagemigration.k8s.io/v1 with Concord's status.progress).
func StorageVersionMigrationCRD() *apiextensionsv1.CustomResourceDefinition {
	return mustLoad(StorageVersionMigrationsFile, storageVersionMigrationsName)
}

// Raw returns the YAML of the named manifest as embedded, for printing or applying
// with other tools.
func Raw(file string) ([]byte, error) {
	return files.ReadFile(file)
}

// mustLoad decodes an embedded manifest. The files are part of the binary and a test
// decodes each, so a failure is a build defect.
func mustLoad(file, name string) *apiextensionsv1.CustomResourceDefinition {
	crd, err := load(file)
	if err != nil {
		panic(err)
	}
	if crd.Name != name {
		panic(fmt.Sprintf("manifests: %s defines %q, want %q", file, crd.Name, name))
	}
	return crd
}

func load(file string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := files.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, fmt.Errorf("manifests: decoding %s: %w", file, err)
	}
	return crd, nil
}
