package builtin

import (
	"context"
	"slices"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var storageVersionMigrationsGR = migrationapi.StorageVersionMigrations.GroupResource()

// storageVersionMigrations returns Concord's own definition of storagemigration.k8s.io
// storageversionmigrations, built from the manifest of migration/api (Kubernetes'
// storagemigration.k8s.io/v1 schema with Concord's status.progress and printer
// columns): v1, stored, and v1beta1, served with the same schema for clients of
// Kubernetes 1.35 and 1.36. It does not depend on the binary, emulation or minimum
// compatibility version: the migration machinery runs while releases are mixed, and
// every release must serve, store and decode its API alike. (The catalog's resource,
// whose versions and storage version follow the release, made a fleet of two releases
// disagree on the storage version and an older server unable to read what a newer
// one stored.)
func storageVersionMigrations() *registry.Resource {
	crd := migrationapi.StorageVersionMigrationCRD()
	res := resourceOf(crd)
	warning := "storagemigration.k8s.io/v1beta1 StorageVersionMigration is deprecated; use storagemigration.k8s.io/v1"
	rv := res.Versions[0]
	rv.Name, rv.Deprecated, rv.DeprecationWarning = "v1beta1", true, &warning
	rv.Schema, rv.Subresources, rv.PrinterColumns = rv.Schema.DeepCopy(), rv.Subresources.DeepCopy(), slices.Clone(rv.PrinterColumns)
	res.Versions = append(res.Versions, rv)
	return res
}

// resourceOf returns the built-in resource a definition of one version describes:
// stored and served in that version, with its schema, subresources and columns.
func resourceOf(crd *apiextensionsv1.CustomResourceDefinition) *registry.Resource {
	v := crd.Spec.Versions[0]
	return &registry.Resource{
		Group:          crd.Spec.Group,
		Names:          crd.Spec.Names,
		Namespaced:     crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		StorageVersion: v.Name,
		Converter:      registry.NoneConverter{Group: crd.Spec.Group},
		Versions: []registry.Version{{
			Name: v.Name, Served: true, Schema: v.Schema.OpenAPIV3Schema.DeepCopy(),
			Subresources: v.Subresources.DeepCopy(), PrinterColumns: slices.Clone(v.AdditionalPrinterColumns),
		}},
	}
}

// configureStorageVersionMigrations gives res Kubernetes' validation of the API:
// on create, spec.resource.resource is required (a DNS-1035 label) and
// spec.resource.group a DNS-1123 subdomain; on update, spec is immutable; a status
// write keeps status.resourceVersion once set (and well formed), keeps a True
// Succeeded or Failed condition True, never has both True, and never has Running
// True beside either. Violations are 422 Invalid with one cause per rule, the field
// paths and messages of Kubernetes. The rules run after any Validate and
// ValidateUpdate hooks res already has, which are kept (res.Hooks is replaced by a
// copy, never changed in place).
func configureStorageVersionMigrations(res *registry.Resource) error {
	res.Hooks = withMigrationValidation(res.Hooks)
	return nil
}

// withMigrationValidation returns a copy of base (nil: no hooks) whose Validate and
// ValidateUpdate also run the StorageVersionMigration rules, after base's own. base
// is not changed: a Hooks value may be shared.
func withMigrationValidation(base *registry.Hooks) *registry.Hooks {
	h := &registry.Hooks{}
	if base != nil {
		*h = *base
	}
	validate, validateUpdate := h.Validate, h.ValidateUpdate
	h.Validate = func(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
		var errs field.ErrorList
		if validate != nil {
			errs = validate(ctx, obj)
		}
		return append(errs, migrationapi.ValidateMigration(obj.Object)...)
	}
	h.ValidateUpdate = func(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
		var errs field.ErrorList
		if validateUpdate != nil {
			errs = validateUpdate(ctx, obj, old)
		}
		return append(errs, migrationapi.ValidateMigrationUpdate(obj.Object, old.Object)...)
	}
	return h
}
